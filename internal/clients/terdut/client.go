// Package terdut is the one typed client for terdut-server's REST API. Every
// method takes a context, every error from the server is an *APIError, and no
// key ever appears in an error: keys travel only in the Authorization header
// and in the Secret fields of responses.
package terdut

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultTimeout bounds one request when Options.Timeout is zero.
	DefaultTimeout = 30 * time.Second
	// defaultMaxRetries is how often a 429 is retried before it is returned.
	defaultMaxRetries = 3
	// maxRetryAfter caps how long one Retry-After is honoured.
	maxRetryAfter = 30 * time.Second
	// maxBody bounds what is read of a response.
	maxBody = 4 << 20
)

var (
	errNoEndpoint = errors.New("terdut-server endpoint is empty")
	errBadCA      = errors.New("CA bundle holds no PEM certificate")
)

// Options configure a Client.
type Options struct {
	// Endpoint is the server's base URL, e.g. http://terdut.oncall.svc:8080.
	Endpoint string
	// Token is the Bearer key. Empty means unauthenticated (healthz,
	// bootstrap).
	Token Secret
	// CABundle is PEM; when set it replaces the system roots.
	CABundle []byte
	// Timeout bounds each request. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries bounds retries of a 429. Zero means 3; negative means none.
	MaxRetries int
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
	// Wrap, when set, wraps the transport the client uses (its CA bundle
	// honoured): a guard that lets only reads through, a counter.
	Wrap func(http.RoundTripper) http.RoundTripper
	// Refresh, when set, is asked once for a new key when the server answers
	// 401; the request is then retried once with it. It is how a revoked or
	// lost team-scoped key is re-minted without looping.
	Refresh func(ctx context.Context) (Secret, error)
	// ListMaxAge shares list answers (a team's switches, integrations, the
	// teams, the users) among callers within this age; zero asks the server
	// every time.
	ListMaxAge time.Duration
}

// A Client talks to one terdut-server with one key. It is safe for concurrent
// use and meant to be reused: see Cache.
type Client struct {
	base       *url.URL
	mu         sync.RWMutex
	token      Secret
	refresh    func(ctx context.Context) (Secret, error)
	http       *http.Client
	maxRetries int
	sleep      func(context.Context, time.Duration) error
	// lists shares list answers among every client of the server (Cache)
	// or of this client alone (New); nil when not shared.
	lists *listCache
	// view names this client's key among the lists' answers (a digest,
	// never the key); guarded by mu.
	view string
	// limiter paces requests to the server; shared by its clients.
	limiter *limiter
}

// New returns a Client for the supplied options.
func New(o Options) (*Client, error) {
	if o.Endpoint == "" {
		return nil, errNoEndpoint
	}
	u, err := url.Parse(strings.TrimRight(o.Endpoint, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("terdut-server endpoint %q is not an http(s) URL", o.Endpoint)
	}
	rt := o.Transport
	if rt == nil {
		if rt, err = newTransport(o.CABundle); err != nil {
			return nil, err
		}
	}
	if o.Wrap != nil {
		rt = o.Wrap(rt)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	retries := o.MaxRetries
	switch {
	case retries == 0:
		retries = defaultMaxRetries
	case retries < 0:
		retries = 0
	}
	c := &Client{
		base:       u,
		token:      o.Token,
		refresh:    o.Refresh,
		http:       &http.Client{Transport: rt, Timeout: timeout},
		maxRetries: retries,
		sleep:      sleepCtx,
		limiter:    newLimiter(),
	}
	if o.ListMaxAge > 0 {
		c.lists = newListCache(o.ListMaxAge)
	}
	c.view = viewOf(o.Token)
	return c, nil
}

// maxIdlePerHost is how many idle connections to one server are kept: one
// transport serves every key of a server (Cache), and Go's default of 2
// would open and close connections under a few concurrent reconciles.
const maxIdlePerHost = 16

// newTransport is an HTTP transport trusting caBundle (PEM) instead of the
// system roots when it is set.
func newTransport(caBundle []byte) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // DefaultTransport is always an *http.Transport.
	t.MaxIdleConnsPerHost = maxIdlePerHost
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errBadCA
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return t, nil
}

// String describes the client without its key.
func (c *Client) String() string { return "terdut.Client{endpoint: " + c.base.String() + "}" }

// GoString describes the client without its key, for %#v.
func (c *Client) GoString() string { return c.String() }

func (c *Client) key() Secret {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// viewOf names a key among shared answers: a digest, never the key.
func viewOf(tok Secret) string {
	h := sha256.Sum256([]byte(tok.Reveal()))
	return hex.EncodeToString(h[:8])
}

// keyView is the view of the client's current key.
func (c *Client) keyView() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.view
}

// Endpoint returns the server's base URL.
func (c *Client) Endpoint() string { return c.base.String() }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do sends one request and decodes a 2xx answer into out (when not nil). A
// 429 is retried after its Retry-After, up to maxRetries times; a 401 is
// retried once with a refreshed key when the client can refresh.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	data, err := c.call(ctx, method, path, q, in)
	if method != http.MethodGet {
		// Our own write: no shared answer may hide it. NOTE: whatever
		// its outcome: a 502, a 504 or a reset connection may come after
		// the server committed it, and a retry that read the list from
		// before would make a second object.
		c.lists.invalidatePath(path)
	}
	if err != nil {
		return err
	}
	return decode(method, path, data, out)
}

// Views of the shared answers besides a key's own.
const (
	// viewAnyKey is the view of answers every key reads alike (the users).
	viewAnyKey = ""
)

// shared is a GET of path whose answer is shared through the lists (if
// any) in view, and decoded into out.
func (c *Client) shared(ctx context.Context, view, path string, out any) error {
	if c.lists == nil {
		return c.do(ctx, http.MethodGet, path, nil, nil, out)
	}
	data, err := c.lists.get(ctx, view, path, func(ctx context.Context) ([]byte, error) {
		return c.call(ctx, http.MethodGet, path, nil, nil)
	})
	if err != nil {
		return err
	}
	return decode(http.MethodGet, path, data, out)
}

// fresh is a GET of path past the shared answers; its answer replaces the
// shared one, and is decoded into out.
func (c *Client) fresh(ctx context.Context, path string, out any) error {
	data, err := c.call(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	c.lists.put(c.keyView(), path, data)
	return decode(http.MethodGet, path, data, out)
}

func decode(method, path string, data []byte, out any) error {
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("terdut-server: %s %s: cannot decode answer: %w", method, path, err)
	}
	return nil
}

// call sends one request and returns a 2xx answer's body.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, in any) ([]byte, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("cannot encode %s %s request: %w", method, path, err)
		}
		body = b
	}
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = q.Encode()

	refreshed, waited := false, false
	for attempt := 0; ; attempt++ {
		// NOTE: a request that just waited out its own 429 does not wait
		// for the pause that 429 set for everyone else.
		if err := c.limiter.wait(ctx, waited); err != nil {
			return nil, fmt.Errorf("terdut-server: %s %s: waiting for the server's rate limit: %w", method, path, err)
		}
		rsp, err := c.send(ctx, method, path, u.String(), body)
		if err != nil {
			return nil, err
		}
		c.limiter.observe(rsp.header, rsp.code)
		waited = false
		switch {
		case rsp.code == http.StatusTooManyRequests && attempt < c.maxRetries:
			if err := c.sleep(ctx, retryAfter(rsp.header.Get("Retry-After"))); err != nil {
				return nil, fmt.Errorf("terdut-server: %s %s: waiting out 429: %w", method, path, err)
			}
			waited = true
			continue
		case rsp.code == http.StatusUnauthorized && rsp.token != c.key():
			// NOTE: another request of this client got a new key while
			// this one was under way (it was refused the same old key):
			// try the new one before asking for yet another.
			continue
		case rsp.code == http.StatusUnauthorized && c.refresh != nil && !refreshed:
			refreshed = true
			if err := c.refreshKey(ctx); err != nil {
				ae := newAPIError(method, path, rsp.code, rsp.data)
				ae.Message += " (and no other key to retry with)"
				return nil, ae
			}
			continue
		case rsp.code >= 400:
			return nil, newAPIError(method, path, rsp.code, rsp.data)
		}
		return rsp.data, nil
	}
}

// answer is what the server said to one request, sent with key token.
type answer struct {
	code   int
	header http.Header
	data   []byte
	token  Secret
}

// send makes one request with the client's current key and reads the answer.
func (c *Client) send(ctx context.Context, method, path, u string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return answer{}, fmt.Errorf("cannot build %s %s request: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tok := c.key()
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	}
	rsp, err := c.http.Do(req)
	if err != nil {
		// url.Error names the URL, which holds no key.
		return answer{}, fmt.Errorf("terdut-server: %s %s: %w", method, path, err)
	}
	defer func() { _ = rsp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(rsp.Body, maxBody))
	if err != nil {
		return answer{}, fmt.Errorf("terdut-server: %s %s: cannot read answer: %w", method, path, err)
	}
	return answer{code: rsp.StatusCode, header: rsp.Header, data: data, token: tok}, nil
}

// refreshKey asks for a new key and uses it from now on.
func (c *Client) refreshKey(ctx context.Context) error {
	tok, err := c.refresh(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.token, c.view = tok, viewOf(tok)
	c.mu.Unlock()
	return nil
}

func newAPIError(method, path string, code int, data []byte) *APIError {
	var eb errorBody
	msg := ""
	if json.Unmarshal(data, &eb) == nil {
		msg = eb.Error
	}
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "..."
	}
	return &APIError{Method: method, Path: path, StatusCode: code, Message: msg}
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); it falls
// back to one second and never waits longer than maxRetryAfter.
func retryAfter(h string) time.Duration {
	d := time.Second
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = time.Until(t)
	}
	if d < 0 {
		d = 0
	}
	return min(d, maxRetryAfter)
}
