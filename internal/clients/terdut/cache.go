package terdut

import (
	"crypto/sha256"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Cache keeps one Client per provider config and reuses it while the
// config's endpoint, credentials, CA bundle and timeout stay the same.
// Building an HTTP client (and its connection pool) per reconcile is the
// memory bug provider-kubernetes had to fix; a changed credential replaces
// the entry rather than adding one, so rotation does not grow the cache.
type Cache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	newFn   func(Options) (*Client, error)
	builds  int
	// servers is what every client of one server shares: its pace, its
	// connection pools and its list answers.
	servers map[string]*server
}

type server struct {
	limiter *limiter
	// lists are the server's shared list answers: a write through any of
	// its clients drops what it could change for all of them, and a client
	// built anew (a key changed) does not miss what another wrote.
	lists *listCache
	// transports are the server's connection pools, by CA bundle: the
	// key is a header, so every key of a server shares one pool (250 team
	// keys are not 250 pools of idle connections).
	transports map[[sha256.Size]byte]*http.Transport
}

type cacheEntry struct {
	digest   [sha256.Size]byte
	endpoint string
	client   *Client
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{entries: map[string]cacheEntry{}, newFn: New, servers: map[string]*server{}}
}

// NormalEndpoint is the endpoint as it names a server: scheme and host
// without case, no trailing slash. NOTE: two names of one server (a
// Service's DNS name and its IP) are not found out.
func NormalEndpoint(e string) string {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(e), "/"))
	if err != nil {
		return e
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.Path
}

// digest hashes everything that makes two clients differ. The token is
// hashed, never kept as a map key.
func digest(o Options) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{o.Endpoint, o.Token.Reveal(), string(o.CABundle), strconv.FormatInt(int64(o.Timeout/time.Millisecond), 10), strconv.Itoa(o.MaxRetries)} {
		_, _ = h.Write([]byte(strconv.Itoa(len(s))))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(s))
	}
	var d [sha256.Size]byte
	copy(d[:], h.Sum(nil))
	return d
}

// Get returns the cached Client for owner (a provider config's identity, e.g.
// "ClusterProviderConfig/default") when its options are unchanged, and builds
// and caches a new one otherwise.
func (c *Cache) Get(owner string, o Options) (*Client, error) {
	d := digest(o)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[owner]; ok && e.digest == d {
		return e.client, nil
	}
	// NOTE: by the endpoint as it names the server: "http://X:8080/" and
	// "http://x:8080" are one server, with one pace and one set of lists.
	endpoint := NormalEndpoint(o.Endpoint)
	srv, ok := c.servers[endpoint]
	if !ok {
		srv = &server{limiter: newLimiter(), transports: map[[sha256.Size]byte]*http.Transport{}}
		c.servers[endpoint] = srv
	}
	if o.Transport == nil {
		ca := sha256.Sum256(o.CABundle)
		t, ok := srv.transports[ca]
		if !ok {
			var err error
			if t, err = newTransport(o.CABundle); err != nil {
				return nil, err
			}
			srv.transports[ca] = t
		}
		o.Transport = t
	}
	cl, err := c.newFn(o)
	if err != nil {
		return nil, err
	}
	c.builds++
	cl.limiter = srv.limiter
	if cl.lists != nil {
		if srv.lists == nil {
			srv.lists = newListCache(o.ListMaxAge)
		}
		cl.lists = srv.lists
	}
	c.entries[owner] = cacheEntry{digest: d, endpoint: endpoint, client: cl}
	c.prune()
	return cl, nil
}

// prune drops what a server's clients shared once it has none left (an
// endpoint changed, or its configs are gone), closing its idle connections.
func (c *Cache) prune() {
	used := map[string]bool{}
	for _, e := range c.entries {
		used[e.endpoint] = true
	}
	for endpoint, srv := range c.servers {
		if used[endpoint] {
			continue
		}
		for _, t := range srv.transports {
			t.CloseIdleConnections()
		}
		delete(c.servers, endpoint)
	}
}

// Forget drops owner's client and those of every owner below it
// ("owner/..."), e.g. when its provider config is deleted: the clients of
// its teams and of other keys go with it.
func (c *Cache) Forget(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k == owner || strings.HasPrefix(k, owner+"/") {
			delete(c.entries, k)
		}
	}
	c.prune()
}

// Builds returns how many clients the cache has built: a client per
// reconcile would show here as a number that grows with every poll.
func (c *Cache) Builds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builds
}

// Throttled returns how many 429s the servers answered the cache's clients.
func (c *Cache) Throttled() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.servers {
		s.limiter.mu.Lock()
		n += s.limiter.throttled
		s.limiter.mu.Unlock()
	}
	return n
}

// Len returns how many clients are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
