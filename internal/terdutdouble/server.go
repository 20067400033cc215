package terdutdouble

import (
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// Options configure a Server.
type Options struct {
	// AdminKey, when set, starts the server as already bootstrapped: a user
	// "admin" holding this key. Empty leaves a fresh server that only
	// POST /api/bootstrap can open.
	AdminKey string
	// Users are extra usernames it starts with (escalation targets).
	Users []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Latency is added to every /api/ answer.
	Latency time.Duration
	// RateLimit limits /api/ requests (see RateLimit).
	RateLimit RateLimit
}

type principal struct {
	keyID     int64
	userID    int64 // user keys (bootstrap admin)
	accountID int64 // service-account keys
	scope     string
	teamID    int64
	// used says a request authenticated with the key.
	used bool
	// created is when the key was minted.
	created time.Time
}

type account struct {
	terdut.ServiceAccount

	keys map[int64]string // key ID -> raw key
}

type ownedSwitch struct {
	terdut.DeadmanSwitch

	teamID int64
}

type ownedIntegration struct {
	terdut.Integration

	teamID int64
}

// Server is the in-memory terdut-server double. Use Handler with httptest, or
// run cmd/terdut-double on loopback.
type Server struct {
	mu sync.Mutex

	nextID int64
	users  map[int64]terdut.User
	keys   map[string]*principal // raw key -> who
	// minted is every service-account key ever minted, revoked or not.
	minted       []*principal
	accounts     map[int64]*account
	teams        map[int64]terdut.Team
	policies     map[int64]terdut.EscalationPolicy
	switches     map[int64]ownedSwitch
	integrations map[int64]ownedIntegration
	created      map[int64]time.Time
	issued       []string

	counters       map[string]int
	paths          map[string]int
	bytes          map[string]int
	byScope        map[string]map[string]int
	faults         []*Fault
	notFoundWindow time.Duration
	now            func() time.Time
	quirks         Quirks
	shuffle        *rand.Rand
	stale          map[string]stale

	latency   time.Duration
	rateLimit RateLimit
	tokens    float64
	bucketAt  time.Time
	perSecond map[int64]int
	rate      RateStats

	// alerts counts what each integration received (alerts.go).
	alerts map[int64]*AlertCount

	api   *http.ServeMux
	admin *http.ServeMux
}

// New returns a Server started from o.
func New(o Options) *Server {
	s := &Server{
		users:        map[int64]terdut.User{},
		keys:         map[string]*principal{},
		accounts:     map[int64]*account{},
		teams:        map[int64]terdut.Team{},
		policies:     map[int64]terdut.EscalationPolicy{},
		switches:     map[int64]ownedSwitch{},
		integrations: map[int64]ownedIntegration{},
		created:      map[int64]time.Time{},
		counters:     map[string]int{},
		paths:        map[string]int{},
		bytes:        map[string]int{},
		byScope:      map[string]map[string]int{},
		perSecond:    map[int64]int{},
		alerts:       map[int64]*AlertCount{},
		stale:        map[string]stale{},
		shuffle:      rand.New(rand.NewPCG(1, 2)), //nolint:gosec // Fault injection needs no cryptographic randomness.
		now:          time.Now,
		latency:      o.Latency,
	}
	if o.Now != nil {
		s.now = o.Now
	}
	s.rateLimit, s.tokens, s.bucketAt = o.RateLimit, float64(o.RateLimit.RPS), s.now()
	if o.AdminKey != "" {
		u := s.addUserLocked("admin", "admin@terdut.test")
		s.keys[o.AdminKey] = &principal{keyID: s.id(), userID: u.ID}
	}
	for _, name := range o.Users {
		s.addUserLocked(name, name+"@terdut.test")
	}
	s.routes()
	return s
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) addUserLocked(name, email string) terdut.User {
	u := terdut.User{ID: s.id(), Username: name, Email: email, CreatedAt: s.now().UTC()}
	s.users[u.ID] = u
	return u
}

// secret returns a new random secret with prefix and remembers it as issued.
func (s *Server) secret(prefix string) string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	v := prefix + hex.EncodeToString(b)
	s.issued = append(s.issued, v)
	return v
}

// Handler serves the API, /healthz and the admin API.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/admin/") {
			s.admin.ServeHTTP(w, r)
			return
		}
		s.serveAPI(w, r)
	})
}

// SetNotFoundAfterCreate makes objects created less than d ago answer 404 on
// GET and stay out of lists, like an eventually consistent server.
func (s *Server) SetNotFoundAfterCreate(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notFoundWindow = d
}

// Counters returns how many requests each "METHOD /route" received.
func (s *Server) Counters() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counters)
}

// PathCounters returns how many requests each "METHOD /path" received, by
// the path as sent (/api/teams/7/escalation): what was asked of one object.
// Unlike Counters, a reset leaves them: a test reads them before and after.
func (s *Server) PathCounters() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.paths)
}

// Count returns the requests "METHOD /route" received.
func (s *Server) Count(methodRoute string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[methodRoute]
}

// Total returns the requests received on every route.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counters {
		n += c
	}
	return n
}

// ResetCounters zeroes the counters.
func (s *Server) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters = map[string]int{}
	s.bytes = map[string]int{}
	s.byScope = map[string]map[string]int{}
	s.perSecond = map[int64]int{}
	s.rate = RateStats{}
}

// CountsByScope returns, per "METHOD /route", how many authenticated
// requests each kind of key made: "admin" (the bootstrap user's), "instance"
// or "team".
func (s *Server) CountsByScope() map[string]map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]int, len(s.byScope))
	for k, v := range s.byScope {
		out[k] = maps.Clone(v)
	}
	return out
}

// Issued returns every secret the double ever issued (API keys, integration
// URLs and keys), so tests can check none of them leaked.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// AddUser adds a user, as a login would.
func (s *Server) AddUser(name string) terdut.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addUserLocked(name, name+"@terdut.test")
}

// RenameUser renames a user, as an identity provider might.
func (s *Server) RenameUser(userID int64, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[userID]
	if ok {
		u.Username = name
		s.users[userID] = u
	}
	return ok
}

// hidden reports whether id was created inside the not-found window.
func (s *Server) hiddenLocked(id int64) bool {
	if s.notFoundWindow <= 0 {
		return false
	}
	t, ok := s.created[id]
	return ok && s.now().Sub(t) < s.notFoundWindow
}

func (s *Server) markCreatedLocked(id int64) { s.created[id] = s.now() }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		//nolint:errchkjson // The status is sent; a body that fails to encode has nobody left to tell.
		_ = json.NewEncoder(w).Encode(v)
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body")
		return false
	}
	return true
}

func pathID(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	v, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil {
		writeError(w, http.StatusNotFound, "not found")
		return 0, false
	}
	return v, true
}

func sortedValues[K int64, V any](m map[K]V) []V {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]V, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}
