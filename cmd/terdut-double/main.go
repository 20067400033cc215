// Command terdut-double serves the in-memory terdut-server TEST DOUBLE
// (internal/terdutdouble) on a loopback address, for the local demo and the
// end-to-end suite. It is not terdut-server.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "terdut-double:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("terdut-double", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "Loopback address to serve on; port 0 picks a free one.")
	adminKey := fs.String("admin-key", "", "Start the double as bootstrapped, with this admin key. Empty generates one, unless -fresh.")
	adminKeyFile := fs.String("admin-key-file", "", "Write the admin key to this file (mode 0600).")
	fresh := fs.Bool("fresh", false, "Start with no users at all, so only POST /api/bootstrap opens it.")
	users := fs.String("users", "alice,bob", "Comma-separated usernames it starts with (escalation targets).")
	addrFile := fs.String("addr-file", "", "Write the base URL (http://127.0.0.1:PORT) to this file once serving.")
	latency := fs.Duration("latency", 0, "Add this to every /api/ answer, as a real server's work and network would.")
	rps := fs.Int("rate-limit", 0, "Answer 429 (with Retry-After) beyond this many /api/ requests a second, and state the limit in a RateLimit-Policy header; 0 is no limit.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %s: the test double serves on loopback only", *listen)
	}

	o := terdutdouble.Options{Latency: *latency, RateLimit: terdutdouble.RateLimit{RPS: *rps}}
	if !*fresh {
		o.AdminKey = *adminKey
		if o.AdminKey == "" {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			o.AdminKey = "tdk_" + hex.EncodeToString(b)
		}
		if *adminKeyFile != "" {
			if err := os.WriteFile(*adminKeyFile, []byte(o.AdminKey), 0o600); err != nil {
				return err
			}
		}
	}
	if *users != "" && !*fresh {
		o.Users = strings.Split(*users, ",")
	}

	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", *listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(url), 0o600); err != nil {
			return err
		}
	}
	fmt.Printf("terdut-double (a test double of terdut-server) serving on %s\n", url)

	srv := &http.Server{Handler: terdutdouble.New(o).Handler(), ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
