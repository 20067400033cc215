package terdutdouble

import (
	"math/rand/v2"
	"time"
)

// Quirks make the double answer as a real server may, with a 200 and no
// error to tell: lists in another order, lists cut short, objects read as
// they were before an update (a replica behind the primary, a cache), and a
// team delete that leaves the team's service accounts for whoever made them
// to delete. A provider must come out of every one of them with nothing
// duplicated, nothing deleted and nothing rewritten that its spec did not
// ask for.
type Quirks struct {
	// Reorder answers every list in a random order: IDs are no promise of
	// order.
	Reorder bool `json:"reorder,omitempty"`
	// ShortLists ends every non-empty list one item early, like a page cut
	// short.
	ShortLists bool `json:"shortLists,omitempty"`
	// Stale answers reads of an object updated less than Stale ago as it
	// was before the update: a team's old name (in the list, by ID and to
	// lookups by name), a switch's or an integration's old fields, a
	// policy's old levels.
	Stale Duration `json:"stale,omitempty"`
	// For bounds how long Reorder, ShortLists and Stale last from when the
	// quirks are set; zero is until they are set again.
	For Duration `json:"for,omitempty"`
	// NoCascade keeps a deleted team's team-scoped service accounts and
	// their keys: the accounts a provider made, it must delete itself. It
	// is not bounded by For.
	NoCascade bool `json:"noCascade,omitempty"`

	until time.Time
}

// stale is how an object read before an update.
type stale struct {
	before any
	at     time.Time
}

// SetQuirks replaces the double's quirks (see Quirks); the zero value is a
// double that answers straight.
func (s *Server) SetQuirks(q Quirks) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.For > 0 {
		q.until = s.now().Add(time.Duration(q.For))
	}
	s.quirks = q
	// NOTE: restarted from the same source each time: the same requests get the same
	// orders, so a model walk that failed fails again when replayed.
	s.shuffle = rand.New(rand.NewPCG(1, 2)) //nolint:gosec // Fault injection needs no cryptographic randomness.
	if q.Stale <= 0 {
		clear(s.stale)
	}
}

// lyingLocked reports whether the bounded quirks are on.
func (s *Server) lyingLocked() bool {
	return s.quirks.until.IsZero() || s.now().Before(s.quirks.until)
}

// listed applies Reorder and ShortLists to a list answer.
func listed[T any](s *Server, out []T) []T {
	if !s.lyingLocked() {
		return out
	}
	if s.quirks.Reorder {
		s.shuffle.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	if s.quirks.ShortLists && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out
}

// updatedLocked records how the object under key read before an update, so
// that reads inside the Stale window still answer it. A second update inside
// the window keeps the first one's picture.
func (s *Server) updatedLocked(key string, before any) {
	if s.quirks.Stale <= 0 || !s.lyingLocked() {
		return
	}
	if old, ok := s.stale[key]; ok && s.now().Sub(old.at) < time.Duration(s.quirks.Stale) {
		return
	}
	s.stale[key] = stale{before: before, at: s.now()}
}

// seen is how a read answers the object under key: its picture before a
// recent update while Stale holds, otherwise now.
func seen[T any](s *Server, key string, now T) T {
	st, ok := s.stale[key]
	if !ok || s.quirks.Stale <= 0 || !s.lyingLocked() || s.now().Sub(st.at) >= time.Duration(s.quirks.Stale) {
		return now
	}
	if v, ok := st.before.(T); ok {
		return v
	}
	return now
}
