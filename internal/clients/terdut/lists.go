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
// path wait for one request. A write through a client that shares the cache
// drops every answer it could change (a path that is a prefix of the write's,
// or below it), so nothing of our own making is read stale; what others
// change is seen once the answer is older than MaxAge.
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

// get returns path's answer: a fresh cached one, the one being fetched, or
// one fetched now with fetch. Errors are not cached.
func (l *listCache) get(ctx context.Context, path string, fetch func(context.Context) ([]byte, error)) ([]byte, error) {
	l.mu.Lock()
	e, ok := l.entries[path]
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
	l.entries[path] = e
	l.mu.Unlock()

	data, err := fetch(ctx)
	l.mu.Lock()
	e.data, e.err, e.at = data, err, l.now()
	if err != nil && l.entries[path] == e {
		delete(l.entries, path)
	}
	l.mu.Unlock()
	close(e.ready)
	return data, err
}

// invalidatePath drops the answers a write to path could change.
func (l *listCache) invalidatePath(path string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.entries {
		if strings.HasPrefix(path, p) || strings.HasPrefix(p, path) {
			delete(l.entries, p)
		}
	}
}
