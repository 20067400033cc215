package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// A Double is a running terdut-server test double (cmd/terdut-double).
type Double struct {
	Name string
	// URL is its base URL on loopback.
	URL string
	// AdminKey is the admin key it starts with; empty for a fresh double.
	AdminKey terdut.Secret
	// Process is the double's process; nil when attached to a running one.
	Process *Process
}

// StartDouble starts a double named name (its log is RUN/NAME.log) with
// args, e.g. "-admin-key", KEY or "-fresh", and waits until it serves.
func (s *Stack) StartDouble(ctx context.Context, name string, args ...string) (*Double, error) {
	addr := filepath.Join(s.Run, name+".url")
	keyFile := filepath.Join(s.Run, name+".key")
	_ = os.Remove(addr)
	users := s.Users
	if len(users) == 0 {
		users = []string{"alice", "bob"}
	}
	all := append([]string{"-listen", "127.0.0.1:0", "-addr-file", addr, "-admin-key-file", keyFile, "-users", strings.Join(users, ",")}, args...)
	p, err := s.Start(ctx, name, s.Bin("terdut-double"), all...)
	if err != nil {
		return nil, err
	}
	if err := waitFile(ctx, addr, 10*time.Second); err != nil {
		return nil, err
	}
	d, err := s.attachDouble(name)
	if err != nil {
		return nil, err
	}
	d.Process = p
	return d, nil
}

func (s *Stack) attachDouble(name string) (*Double, error) {
	u, err := os.ReadFile(filepath.Join(s.Run, name+".url"))
	if err != nil {
		return nil, err
	}
	key, _ := os.ReadFile(filepath.Join(s.Run, name+".key"))
	return &Double{Name: name, URL: strings.TrimSpace(string(u)), AdminKey: terdut.Secret(strings.TrimSpace(string(key)))}, nil
}

func waitFile(ctx context.Context, path string, d time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end); {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not appear in %s", path, d)
}

// Admin calls the double's admin API: in is sent as JSON, out decoded.
func (d *Double) Admin(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, body)
	if err != nil {
		return err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = rsp.Body.Close() }()
	if rsp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, path, rsp.Status)
	}
	if out != nil {
		return json.NewDecoder(rsp.Body).Decode(out)
	}
	return nil
}

// State is what the double holds.
func (d *Double) State(ctx context.Context) (terdutdouble.State, error) {
	var st terdutdouble.State
	return st, d.Admin(ctx, http.MethodGet, "/admin/state", nil, &st)
}

// Counters are the requests the double received, per "METHOD /route".
func (d *Double) Counters(ctx context.Context) (map[string]int, error) {
	c := map[string]int{}
	return c, d.Admin(ctx, http.MethodGet, "/admin/counters", nil, &c)
}

// AddFault installs a fault.
func (d *Double) AddFault(ctx context.Context, f terdutdouble.Fault) error {
	return d.Admin(ctx, http.MethodPost, "/admin/faults", f, nil)
}

// ClearFaults removes every fault.
func (d *Double) ClearFaults(ctx context.Context) error {
	return d.Admin(ctx, http.MethodDelete, "/admin/faults", nil, nil)
}

// Issued is every secret the double issued.
func (d *Double) Issued(ctx context.Context) ([]string, error) {
	var keys []string
	return keys, d.Admin(ctx, http.MethodGet, "/admin/issued", nil, &keys)
}
