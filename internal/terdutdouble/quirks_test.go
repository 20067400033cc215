package terdutdouble

import (
	"slices"
	"testing"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

func TestStaleReadsAnswerTheObjectBeforeItsUpdate(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, c, _ := serve(t, Options{AdminKey: "tdk_admin", Now: clk.now, Users: []string{"alice"}})
	ctx := t.Context()
	tm, err := c.CreateTeam(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	sw, err := c.CreateDeadmanSwitch(ctx, tm.ID, terdut.DeadmanSwitch{Name: "w", Matcher: "a=b", Timeout: "5m"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetQuirks(Quirks{Stale: Duration(10 * time.Second)})
	must(t, c.RenameTeam(ctx, tm.ID, "new"))
	must(t, c.RenameTeam(ctx, tm.ID, "newer"))
	must(t, c.UpdateDeadmanSwitch(ctx, tm.ID, sw.ID, terdut.DeadmanSwitch{Name: "w", Matcher: "a=b", Timeout: "9m"}))
	must(t, c.PutEscalationPolicy(ctx, tm.ID, terdut.EscalationPolicy{RepeatCount: 2}))

	read := func() (name, byName, timeout string, repeat int64) {
		t.Helper()
		got, err := c.ReadTeam(ctx, tm.ID)
		must(t, err)
		if n, _ := c.GetTeamByName(ctx, got.Name); n != nil {
			byName = n.Name
		}
		sws, err := c.ListDeadmanSwitches(ctx, tm.ID)
		must(t, err)
		p, err := c.GetEscalationPolicy(ctx, tm.ID)
		must(t, err)
		return got.Name, byName, sws[0].Timeout, p.RepeatCount
	}
	if name, byName, timeout, repeat := read(); name != "old" || byName != "old" || timeout != "5m" || repeat != 0 {
		t.Errorf("inside the window: team %q (by name %q), timeout %q, repeat %d; want every read as before the updates", name, byName, timeout, repeat)
	}
	if truth := s.Snapshot(); truth.Teams[0].Name != "newer" {
		t.Errorf("the admin snapshot reads %q: it must tell the truth", truth.Teams[0].Name)
	}
	clk.t = clk.t.Add(10 * time.Second)
	if name, byName, timeout, repeat := read(); name != "newer" || byName != "newer" || timeout != "9m" || repeat != 2 {
		t.Errorf("after the window: team %q (by name %q), timeout %q, repeat %d", name, byName, timeout, repeat)
	}
}

func TestListsReorderAndEndEarly(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, c, _ := serve(t, Options{AdminKey: "tdk_admin", Now: clk.now})
	ctx := t.Context()
	want := make([]int64, 0, 7)
	want = append(want, 1) // the admin
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		want = append(want, s.AddUser(n).ID)
	}
	ids := func() []int64 {
		t.Helper()
		us, err := c.ListUsers(ctx)
		must(t, err)
		out := make([]int64, 0, len(us))
		for _, u := range us {
			out = append(out, u.ID)
		}
		return out
	}
	s.SetQuirks(Quirks{ShortLists: true, For: Duration(time.Minute)})
	if got := ids(); !slices.Equal(got, want[:len(want)-1]) {
		t.Errorf("a short list answered %v, want %v", got, want[:len(want)-1])
	}
	s.SetQuirks(Quirks{Reorder: true, For: Duration(time.Minute)})
	reordered := false
	for range 20 {
		got := ids()
		if len(got) != len(want) {
			t.Fatalf("a reordered list has %d items, want %d", len(got), len(want))
		}
		reordered = reordered || !slices.IsSorted(got)
	}
	if !reordered {
		t.Error("20 reordered lists were all sorted by ID")
	}
	clk.t = clk.t.Add(time.Minute)
	if got := ids(); !slices.Equal(got, want) {
		t.Errorf("after For the list answered %v, want %v", got, want)
	}
}

func TestNoCascadeKeepsADeletedTeamsAccounts(t *testing.T) {
	for _, cascade := range []bool{true, false} {
		s, c, _ := serve(t, Options{AdminKey: "tdk_admin"})
		ctx := t.Context()
		tm, err := c.CreateTeam(ctx, "t")
		must(t, err)
		if _, err := c.CreateServiceAccount(ctx, terdut.ServiceAccount{Name: "sa", Scope: terdut.ScopeTeam, TeamID: &tm.ID}); err != nil {
			t.Fatal(err)
		}
		s.SetQuirks(Quirks{NoCascade: !cascade})
		must(t, c.DeleteTeam(ctx, tm.ID))
		if left := len(s.Snapshot().ServiceAccounts); left != map[bool]int{true: 0, false: 1}[cascade] {
			t.Errorf("cascade %v: %d accounts left after the team's delete", cascade, left)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
