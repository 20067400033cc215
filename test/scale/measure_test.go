package main

import (
	"testing"
	"time"
)

func TestAPIRequestsPerMR(t *testing.T) {
	before := apiRequests(`# HELP apiserver_request_total x
apiserver_request_total{code="200",component="apiserver",dry_run="",group="terdut.crossplane.io",resource="teams",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="LIST",version="v1"} 7
`)
	after := apiRequests(`apiserver_request_total{code="200",component="apiserver",dry_run="",group="terdut.crossplane.io",resource="teams",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 30
apiserver_request_total{code="409",component="apiserver",dry_run="",group="terdut.crossplane.io",resource="teams",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 5
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="LIST",version="v1"} 17
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="WATCH",version="v1"} 900
`)
	got := requestsSince(before, after, 10)
	want := map[string]float64{"PUT teams/status": 2, "PUT teams/status (409)": 0.5, "POST events": 1, "LIST secrets": 1}
	if len(got) != len(want) || got["PUT teams/status"] != 2 || got["PUT teams/status (409)"] != 0.5 || got["POST events"] != 1 || got["LIST secrets"] != 1 {
		t.Fatalf("requests per MR: got %v, want %v (watches left out, conflicts apart)", got, want)
	}
	if s, want := perMR(got), "3.50 writes and 1.00 reads (PUT teams/status 2.00, LIST secrets 1.00, POST events 1.00, PUT teams/status (409) 0.50)"; s != want {
		t.Errorf("printed %q, want %q", s, want)
	}
	if requestsSince(nil, after, 10) != nil {
		t.Error("with the first read missing, the figure must be missing, not the whole count")
	}
}

func TestTheBenchSizesTheRateAsTheSizingSays(t *testing.T) {
	b := &bench{poll: 30 * time.Second, rate: 100}
	for n, want := range map[int]int{100: 0, 1000: 0, 2500: 0, 5000: 200, 10000: 400} {
		if got := b.sizedRate(n); got != want {
			t.Errorf("%d MRs at --poll=30s: --max-reconcile-rate=%d, want %d (0: the provider's 100)", n, got, want)
		}
	}
	b.rateSet = true
	if got := b.sizedRate(5000); got != 0 {
		t.Errorf("with a rate set by -provider-args the bench sized it to %d", got)
	}
}
