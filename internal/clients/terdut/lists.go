package terdut

import (
	"context"
	"strings"
	"sync"
	"time"
)

// A listCache shares the answers of GET requests among everything that asks
// within MaxAge: the switches of a team are listed once for all of that
// team's DeadmanSwitches, not once per switch. Concurrent asks for the same
// path wait for one request. There is one per server, shared by all its
// clients; an answer is kept per view (the key that read it: two keys may
// see two answers), and "" is the view every key shares (the users). Any
// write to the server through any of its clients drops every answer it
// could change (a path that is a prefix of the write's, or below it) in
// every view, whatever the write's outcome: a write answered 502 may have
// been committed. A write within a team's policy, switches or integrations
// leaves the list of teams alone (no team's answer holds them). So nothing
// of our own making is read stale; what others change is seen once the
// answer is older than MaxAge.
type listCache struct {
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*listEntry
}

type listEntry struct {
	ready chan struct{}
	at    time.Time
	data  []byte
	err   error
}

func newListCache(maxAge time.Duration) *listCache {
	return &listCache{maxAge: maxAge, now: time.Now, entries: map[string]*listEntry{}}
}

// entryKey names path's answer in one view.
func entryKey(view, path string) string { return view + "\x00" + path }

// get returns path's answer in view: a fresh cached one, the one being
// fetched, or one fetched now with fetch. Errors are not cached.
func (l *listCache) get(ctx context.Context, view, path string, fetch func(context.Context) ([]byte, error)) ([]byte, error) {
	key := entryKey(view, path)
	l.mu.Lock()
	e, ok := l.entries[key]
	if ok && (e.at.IsZero() || l.now().Sub(e.at) < l.maxAge) {
		l.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil {
			return e.data, nil
		}
		// The request it waited for failed: ask again, itself.
		return fetch(ctx)
	}
	e = &listEntry{ready: make(chan struct{})}
	l.entries[key] = e
	l.mu.Unlock()

	data, err := fetch(ctx)
	l.mu.Lock()
	e.data, e.err, e.at = data, err, l.now()
	if err != nil && l.entries[key] == e {
		delete(l.entries, key)
	}
	l.mu.Unlock()
	close(e.ready)
	return data, err
}

// invalidatePath drops the answers a write to path could change, in every
// view.
func (l *listCache) invalidatePath(path string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.entries {
		_, p, _ := strings.Cut(k, "\x00")
		if changes(path, p) {
			delete(l.entries, k)
		}
	}
}

// childCollection says whether seg names a part of a team its answer (and
// the list of teams) does not hold.
func childCollection(seg string) bool {
	return seg == pathEscalation || seg == pathIntegrations || seg == strings.Split(pathDeadman, "/")[0]
}

// changes says whether a write to path w may change the answer of a GET of
// path p: p is w or below it (w's object, or its whole team, is written or
// deleted), or w is below p but not within a team's child collection, which
// p's answer does not hold.
func changes(w, p string) bool {
	if strings.HasPrefix(p, w) {
		return true
	}
	rest, below := strings.CutPrefix(w, p)
	if !below {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if childCollection(seg) {
			return false
		}
	}
	return true
}

// put stores a fresh answer for path in view: the freshest the process has,
// for everything that asks next.
func (l *listCache) put(view, path string, data []byte) {
	if l == nil {
		return
	}
	e := &listEntry{ready: make(chan struct{}), data: data, at: l.now()}
	close(e.ready)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[entryKey(view, path)] = e
}
