package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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
	sw func(name string) client.Object
	// ready is whether that object is Ready.
	ready   func(ctx context.Context, name string) bool
	kill    func()
	restart func(ctx context.Context) error
}

// ourSubject is provider-terdut in ns.
func (b *bench) ourSubject(ctx context.Context, ns string) (subject, error) {
	team := &v1alpha1.Team{}
	if err := b.seen.Get(ctx, types.NamespacedName{Namespace: ns, Name: "t0"}, team); err != nil {
		return subject{}, err
	}
	id, err := b.teamID(ctx, ns)
	if err != nil {
		return subject{}, err
	}
	return subject{
		ns: ns, poll: b.poll, teamID: id,
		sw: func(name string) client.Object {
			return &v1alpha1.DeadmanSwitch{
				ObjectMeta: objectMeta(ns, name),
				Spec: v1alpha1.DeadmanSwitchSpec{ForProvider: v1alpha1.DeadmanSwitchParameters{
					TeamIDRef: &xpv2.Reference{Name: "t0"}, Name: name, Matcher: "alertname=Watchdog,switch=" + name, Timeout: "15m",
				}},
			}
		},
		ready: func(ctx context.Context, name string) bool {
			sw := &v1alpha1.DeadmanSwitch{}
			if b.seen.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sw) != nil {
				return false
			}
			return sw.GetCondition(xpv2.TypeReady).Status == "True" && sw.GetCondition(xpv2.TypeSynced).Status == "True"
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
	st, err := b.stack.Double.State(ctx)
	if err != nil {
		return subject{}, err
	}
	return subject{
		ns: ns, poll: poll, teamID: id,
		sw: func(name string) client.Object {
			// Team 0's switch Request, as the shape writes it, renamed.
			for _, o := range dependents(b.stack.Double.URL, ns, 0, id, st.Users[0].ID) {
				if strings.HasSuffix(o.GetName(), "-sw0") {
					u, _ := o.(*unstructured.Unstructured)
					u.SetName(name)
					_ = unstructured.SetNestedField(u.Object, body(map[string]any{"name": name, "matcher": "alertname=Watchdog,switch=" + name, "timeout": "15m"}), "spec", "forProvider", "payload", "body")
					return u
				}
			}
			return nil
		},
		ready: func(ctx context.Context, name string) bool {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(requestGVK)
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
	wait := func(name string, limit time.Duration) bool {
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Second) {
			if s.ready(ctx, name) {
				return true
			}
		}
		return false
	}

	// Drift: the team renamed on the server behind the provider's back.
	drifted := s.ns + " team 0 renamed by hand"
	if err := admin.RenameTeam(ctx, s.teamID, drifted); err != nil {
		return nil, err
	}
	reverted := time.Duration(0)
	start := time.Now()
	for time.Since(start) < s.poll+15*time.Second {
		t, err := admin.GetTeam(ctx, s.teamID)
		if err != nil {
			return nil, err
		}
		if t.Name == s.ns+" team 0" {
			reverted = time.Since(start)
			break
		}
		time.Sleep(time.Second)
	}
	found := "not reverted within a poll + 15 s"
	if reverted > 0 {
		found = fmt.Sprintf("reverted after %.0f s (poll %s)", reverted.Seconds(), s.poll)
	}
	out = append(out, behaviour{What: "drift reverted within a poll", How: "team renamed on the server; its name read back every second", Good: reverted > 0, Found: found})

	// A switch that exists on the server under the name asked for: the API
	// has no unique names, so a second create duplicates it.
	if _, err := admin.CreateDeadmanSwitch(ctx, s.teamID, terdut.DeadmanSwitch{Name: "made-by-hand", Matcher: "alertname=Watchdog,switch=made-by-hand", Timeout: "15m"}); err != nil {
		return nil, err
	}
	if err := b.kube.Create(ctx, s.sw("made-by-hand")); err != nil {
		return nil, err
	}
	ok := wait("made-by-hand", 2*s.poll)
	n, err := b.switchesNamed(ctx, s.teamID, "made-by-hand")
	if err != nil {
		return nil, err
	}
	out = append(out, behaviour{What: "existing switch adopted, not duplicated", How: "switch made on the server, then asked for by the same name", Good: n == 1, Found: fmt.Sprintf("%d on the server, Ready %s", n, yesNo(ok))})

	// A 504 after the server committed the POST.
	if err := b.stack.Double.AddFault(ctx, terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusGatewayTimeout, Commit: true, Times: 1}); err != nil {
		return nil, err
	}
	if err := b.kube.Create(ctx, s.sw("after-504")); err != nil {
		return nil, err
	}
	ok = wait("after-504", 2*s.poll)
	n, err = b.switchesNamed(ctx, s.teamID, "after-504")
	if err != nil {
		return nil, err
	}
	out = append(out, behaviour{What: "no second create after a 504 to a committed POST", How: "the double commits a switch's POST, answers 504", Good: n == 1, Found: fmt.Sprintf("%d on the server, Ready %s", n, yesNo(ok))})

	// Killed between the POST and the status write, five times.
	dups, stuck := 0, 0
	for i := range 5 {
		name := fmt.Sprintf("killed-%d", i)
		if err := b.stack.Double.AddFault(ctx, terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Commit: true, Delay: terdutdouble.Duration(10 * time.Second), Times: 1}); err != nil {
			return nil, err
		}
		if err := b.kube.Create(ctx, s.sw(name)); err != nil {
			return nil, err
		}
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if n, err := b.switchesNamed(ctx, s.teamID, name); err != nil || n > 0 || time.Now().After(deadline) {
				break
			}
		}
		s.kill()
		if err := s.restart(ctx); err != nil {
			return nil, err
		}
		if !wait(name, 2*s.poll) {
			stuck++
		}
		if n, err := b.switchesNamed(ctx, s.teamID, name); err != nil {
			return nil, err
		} else if n != 1 {
			dups++
		}
	}
	_ = b.stack.Double.ClearFaults(ctx)
	out = append(out, behaviour{What: "no duplicate after a kill between POST and status write", How: "SIGKILL while the double holds a committed POST's answer, restart; 5 trials",
		Good: dups == 0, Found: fmt.Sprintf("%d of 5 duplicated, %d not Ready within two polls", dups, stuck)})
	return out, nil
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
