package terdutdouble

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Fault changes how the double answers matching requests.
type Fault struct {
	// Method matches the request method; empty matches any.
	Method string `json:"method,omitempty"`
	// Route matches the ServeMux route, e.g. "/api/teams/{id}"; empty
	// matches any /api/ route.
	Route string `json:"route,omitempty"`
	// Status replaces the answer's status (with an error body). Zero keeps
	// the real answer.
	Status int `json:"status,omitempty"`
	// Body replaces the error body of a Status answer, e.g. "[]" with
	// status 200 for a list that lags behind a create.
	Body string `json:"body,omitempty"`
	// Times is how many requests the fault applies to; zero means all.
	Times int `json:"times,omitempty"`
	// Delay holds the answer this long (or until the client goes away).
	Delay Duration `json:"delay,omitempty"`
	// Commit runs the real handler first, so its state change is kept, and
	// only then answers with Status: "commit then fail".
	Commit bool `json:"commit,omitempty"`
	// Probability applies the fault to that share of the matching requests
	// (0 < p < 1); zero (or 1) applies it to all of them.
	Probability float64 `json:"probability,omitempty"`
	// For bounds how long the fault lasts from when it is added; zero is
	// until it is cleared (or its Times are used up).
	For Duration `json:"for,omitempty"`
	// RetryAfter is the Retry-After (seconds) of a 429 Status.
	RetryAfter int `json:"retryAfter,omitempty"`

	until time.Time
}

// Duration is a time.Duration that reads and writes as a Go duration string.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// RateLimit makes the double a server that limits requests: at most RPS
// /api/ requests a second (a token bucket of one second's worth), the rest
// answered 429 with Retry-After; every answer states the limit in a
// RateLimit-Policy header ("RPS;w=1"). Zero RPS turns it off.
type RateLimit struct {
	RPS        int `json:"rps"`
	RetryAfter int `json:"retryAfter,omitempty"`
}

// RateStats say what arrived at the double, second by second, since the
// counters were last reset.
type RateStats struct {
	// Limit is the stated limit (0: none).
	Limit int `json:"limit"`
	// Requests and Throttled count the /api/ requests and the 429s.
	Requests  int `json:"requests"`
	Throttled int `json:"throttled"`
	// MaxPerSecond is the most /api/ requests that arrived within one
	// calendar second.
	MaxPerSecond int `json:"maxPerSecond"`
	// Seconds is how many calendar seconds saw a request.
	Seconds int `json:"seconds"`
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.api.Handler(r)
	method, route, _ := strings.Cut(pattern, " ")
	if route == "" {
		route, method = method, r.Method
	}
	s.mu.Lock()
	key := r.Method + " " + route
	s.counters[key]++
	s.paths[r.Method+" "+r.URL.Path]++
	api := strings.HasPrefix(route, "/api/")
	throttled := api && s.countRateLocked()
	f := s.takeFaultLocked(method, route)
	latency, limit := s.latency, s.rateLimit
	s.mu.Unlock()

	if api && latency > 0 && !sleep(r, latency) {
		return
	}
	cw := &countingWriter{ResponseWriter: w}
	defer func() { s.addBytes(key, cw.n) }()
	if limit.RPS > 0 {
		cw.Header().Set("Ratelimit-Policy", strconv.Itoa(limit.RPS)+";w=1")
	}
	switch {
	case throttled:
		cw.Header().Set("Retry-After", strconv.Itoa(max(limit.RetryAfter, 1)))
		writeError(cw, http.StatusTooManyRequests, "rate limited")
	case f == nil:
		s.api.ServeHTTP(cw, r)
	default:
		s.serveFault(cw, r, f)
	}
}

// serveFault answers a request a fault matched.
func (s *Server) serveFault(w http.ResponseWriter, r *http.Request, f *Fault) {
	var rec *httptest.ResponseRecorder
	if f.Commit || f.Status == 0 {
		rec = httptest.NewRecorder()
		s.api.ServeHTTP(rec, r)
	}
	if f.Delay > 0 && !sleep(r, time.Duration(f.Delay)) {
		return
	}
	if f.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(max(f.RetryAfter, 1)))
	}
	switch {
	case f.Status != 0 && f.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
	case f.Status != 0:
		writeError(w, f.Status, "injected fault")
	default:
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}
}

// sleep holds the answer for d; false when the client went away meanwhile.
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) takeFaultLocked(method, route string) *Fault {
	now := s.now()
	s.faults = slices.DeleteFunc(s.faults, func(f *Fault) bool { return !f.until.IsZero() && now.After(f.until) })
	for i, f := range s.faults {
		if f.Method != "" && f.Method != method {
			continue
		}
		if f.Route != "" && f.Route != route {
			continue
		}
		if f.Route == "" && !strings.HasPrefix(route, "/api/") {
			continue
		}
		if f.Probability > 0 && f.Probability < 1 && rand.Float64() >= f.Probability { //nolint:gosec // Fault injection needs no cryptographic randomness.
			continue
		}
		c := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return &c
	}
	return nil
}

// countRateLocked counts one /api/ request in its second and reports
// whether the rate limit refuses it.
func (s *Server) countRateLocked() bool {
	now := s.now()
	sec := now.Unix()
	s.perSecond[sec]++
	s.rate.Requests++
	if s.rateLimit.RPS <= 0 {
		return false
	}
	// A token bucket of one second's worth, refilled continuously.
	elapsed := now.Sub(s.bucketAt).Seconds()
	s.bucketAt = now
	s.tokens = min(float64(s.rateLimit.RPS), s.tokens+elapsed*float64(s.rateLimit.RPS))
	if s.tokens < 1 {
		s.rate.Throttled++
		return true
	}
	s.tokens--
	return false
}

// SetRateLimit makes the double limit requests (see RateLimit).
func (s *Server) SetRateLimit(l RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimit, s.tokens, s.bucketAt = l, float64(l.RPS), s.now()
}

// SetLatency adds d to every /api/ answer.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Rate says what arrived, second by second, since the counters were reset.
func (s *Server) Rate() RateStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.rate
	st.Limit = s.rateLimit.RPS
	st.Seconds = len(s.perSecond)
	for _, n := range s.perSecond {
		st.MaxPerSecond = max(st.MaxPerSecond, n)
	}
	return st
}

// AddFault installs a fault; faults are tried in the order they were added.
func (s *Server) AddFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.For > 0 {
		f.until = s.now().Add(time.Duration(f.For))
	}
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) addBytes(key string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes[key] += n
}

// Bytes returns how many response body bytes each "METHOD /route" sent.
func (s *Server) Bytes() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.bytes)
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter

	n int
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += n
	return n, err
}
