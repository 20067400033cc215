package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// A behaviour is what a user would notice beyond speed, tried the same way
// on each provider: Good is the answer a user wants.
type behaviour struct {
	What  string `json:"what"`
	How   string `json:"how"`
	Good  bool   `json:"good"`
	Found string `json:"found"`
}

// A subject is a provider under trial, in a namespace whose mixed shape is
// Ready: how to ask it for one more switch of team 0, and to crash it.
type subject struct {
	ns     string
	poll   time.Duration
	teamID int64 // team 0's, on the server
	// sw makes the object that asks for switch name of team 0.
	sw func(name string) (client.Object, error)
	// ready is whether that object is Ready.
	ready   func(ctx context.Context, name string) bool
	kill    func()
	restart func(ctx context.Context) error
}

// ourSubject is provider-terdut in ns.
func (b *bench) ourSubject(ctx context.Context, ns string) (subject, error) {
	id, err := b.teamID(ctx, ns)
	if err != nil {
		return subject{}, err
	}
	return subject{
		ns: ns, poll: b.poll, teamID: id,
		sw: func(name string) (client.Object, error) {
			return &v1alpha1.DeadmanSwitch{ // as the shape writes them
				ObjectMeta: objectMeta(ns, name),
				Spec: v1alpha1.DeadmanSwitchSpec{ForProvider: v1alpha1.DeadmanSwitchParameters{
					TeamIDRef: &xpv2.Reference{Name: "t0"}, Name: name, Matcher: "alertname=Watchdog,switch=" + name, Timeout: "15m",
				}},
			}, nil
		},
		ready: func(ctx context.Context, name string) bool {
			sw := &v1alpha1.DeadmanSwitch{}
			if b.seen.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sw) != nil {
				return false
			}
			return readyAndSynced(sw)
		},
		kill:    b.stack.KillProvider,
		restart: func(ctx context.Context) error { return b.stack.StartProvider(ctx) },
	}, nil
}

// peerSubject is provider-http in ns, started with args.
func (b *bench) peerSubject(ctx context.Context, p *peer, ns string, poll time.Duration, args []string) (subject, error) {
	id, err := b.teamID(ctx, ns)
	if err != nil {
		return subject{}, err
	}
	return subject{
		ns: ns, poll: poll, teamID: id,
		sw: func(name string) (client.Object, error) {
			objs, err := manifest{API: b.stack.Double.URL, NS: ns, TeamID: id, Name: name}.objects("switch")
			if err != nil {
				return nil, err
			}
			return objs[0], nil
		},
		ready: func(ctx context.Context, name string) bool {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(requestGVK())
			if b.seen.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u) != nil {
				return false
			}
			ok, _, _ := requestState(u)
			return ok
		},
		kill: func() { p.proc.Kill() },
		restart: func(ctx context.Context) error {
			p.proc = nil
			return b.startPeer(ctx, p, args...)
		},
	}, nil
}

// teamID is the server's id of ns's team 0.
func (b *bench) teamID(ctx context.Context, ns string) (int64, error) {
	st, err := b.stack.Double.State(ctx)
	if err != nil {
		return 0, err
	}
	for _, t := range st.Teams {
		if t.Name == ns+" team 0" {
			return t.ID, nil
		}
	}
	return 0, fmt.Errorf("no server team %q", ns+" team 0")
}

// switchesNamed counts team's switches named name on the server.
func (b *bench) switchesNamed(ctx context.Context, team int64, name string) (int, error) {
	st, err := b.stack.Double.State(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sw := range st.Switches {
		if sw.TeamID == team && sw.Name == name {
			n++
		}
	}
	return n, nil
}

// trials tries s for the behaviours a user would notice beyond speed; the
// leak count of its run is the first.
func (b *bench) trials(ctx context.Context, s subject, leaks int) ([]behaviour, error) {
	out := []behaviour{{
		What: "once-shown integration key kept out of sight", How: "every issued key searched for in kubectl get -o yaml of the namespace's MRs and events after all Ready",
		Good: leaks == 0, Found: fmt.Sprintf("%d keys shown", leaks),
	}}
	admin, err := stack.NewAdminClient(b.stack.Double)
	if err != nil {
		return nil, err
	}
	for _, try := range []func(context.Context, subject, *terdut.Client) (behaviour, error){b.drift, b.adopt, b.after504, b.killed} {
		got, err := try(ctx, s, admin)
		if err != nil {
			return nil, err
		}
		out = append(out, got)
	}
	return out, nil
}

// waitReady waits up to limit for s's switch name to be Ready.
func (s subject) waitReady(ctx context.Context, name string, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Second) {
		if s.ready(ctx, name) {
			return true
		}
	}
	return false
}

// drift renames team 0 on the server behind the provider's back.
func (b *bench) drift(ctx context.Context, s subject, admin *terdut.Client) (behaviour, error) {
	want := s.ns + " team 0"
	if err := admin.RenameTeam(ctx, s.teamID, s.ns+" team 0 renamed by hand"); err != nil {
		return behaviour{}, err
	}
	start := time.Now()
	reverted := time.Duration(0)
	for reverted == 0 && time.Since(start) < s.poll+15*time.Second {
		time.Sleep(time.Second)
		t, err := admin.GetTeam(ctx, s.teamID)
		if err != nil {
			return behaviour{}, err
		}
		if t.Name == want {
			reverted = time.Since(start)
		}
	}
	found := "not reverted within a poll + 15 s"
	if reverted > 0 {
		found = fmt.Sprintf("reverted after %.0f s (poll %s)", reverted.Seconds(), s.poll)
	}
	return behaviour{What: "drift reverted within a poll", How: "team renamed on the server; its name read back every second", Good: reverted > 0, Found: found}, nil
}

// adopt asks for a switch that already exists on the server under that
// name: the API has no unique names, so a second create duplicates it.
func (b *bench) adopt(ctx context.Context, s subject, admin *terdut.Client) (behaviour, error) {
	const name = "made-by-hand"
	if _, err := admin.CreateDeadmanSwitch(ctx, s.teamID, terdut.DeadmanSwitch{Name: name, Matcher: "alertname=Watchdog,switch=" + name, Timeout: "15m"}); err != nil {
		return behaviour{}, err
	}
	return b.once(ctx, s, name, "existing switch adopted, not duplicated", "switch made on the server, then asked for by the same name")
}

// after504 has the double commit a switch's POST and answer 504.
func (b *bench) after504(ctx context.Context, s subject, _ *terdut.Client) (behaviour, error) {
	const name = "after-504"
	if err := b.stack.Double.AddFault(ctx, terdutdouble.Fault{Method: http.MethodPost, Route: switchesRoute, Status: http.StatusGatewayTimeout, Commit: true, Times: 1}); err != nil {
		return behaviour{}, err
	}
	return b.once(ctx, s, name, "no second create after a 504 to a committed POST", "the double commits a switch's POST, answers 504")
}

// once asks s for switch name and holds when, within two polls, it is
// Ready and the server has exactly one switch of that name.
func (b *bench) once(ctx context.Context, s subject, name, what, how string) (behaviour, error) {
	if err := b.ask(ctx, s, name); err != nil {
		return behaviour{}, err
	}
	ok := s.waitReady(ctx, name, 2*s.poll)
	n, err := b.switchesNamed(ctx, s.teamID, name)
	return behaviour{What: what, How: how, Good: n == 1 && ok, Found: fmt.Sprintf("%d on the server, Ready %s", n, yesNo(ok))}, err
}

// switchesRoute is the route of a team's switches.
const switchesRoute = "/api/teams/{id}/deadman/switches"

// killed kills the provider between a committed POST and its status
// write, five times: the double holds the POST's answer while the
// provider is killed, then restarted.
func (b *bench) killed(ctx context.Context, s subject, _ *terdut.Client) (behaviour, error) {
	dups, stuck, missing := 0, 0, 0
	for i := range 5 {
		name := fmt.Sprintf("killed-%d", i)
		if err := b.stack.Double.AddFault(ctx, terdutdouble.Fault{Method: http.MethodPost, Route: switchesRoute, Commit: true, Delay: terdutdouble.Duration(10 * time.Second), Times: 1}); err != nil {
			return behaviour{}, err
		}
		if err := b.ask(ctx, s, name); err != nil {
			return behaviour{}, err
		}
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if n, err := b.switchesNamed(ctx, s.teamID, name); err != nil || n > 0 {
				break
			}
		}
		s.kill()
		if err := s.restart(ctx); err != nil {
			return behaviour{}, err
		}
		if !s.waitReady(ctx, name, 2*s.poll) {
			stuck++
		}
		n, err := b.switchesNamed(ctx, s.teamID, name)
		if err != nil {
			return behaviour{}, err
		}
		switch {
		case n > 1:
			dups++
		case n == 0:
			missing++
		}
	}
	return behaviour{
		What: "no duplicate after a kill between POST and status write", How: "SIGKILL while the double holds a committed POST's answer, restart; 5 trials",
		Good: dups == 0 && missing == 0 && stuck == 0, Found: fmt.Sprintf("%d of 5 duplicated, %d missing, %d not Ready within two polls", dups, missing, stuck),
	}, b.stack.Double.ClearFaults(ctx)
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// ask asks s for switch name of team 0.
func (b *bench) ask(ctx context.Context, s subject, name string) error {
	o, err := s.sw(name)
	if err != nil {
		return err
	}
	return b.kube.Create(ctx, o)
}
