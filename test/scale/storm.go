package main

import (
	"context"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// storm is what a 429 storm at rest showed.
type storm struct {
	Limit int `json:"statedLimitPerSecond"`
	// MaxPerSecond is the most requests that arrived in one second.
	MaxPerSecond int `json:"maxPerSecond"`
	Requests     int `json:"requests"`
	Throttled    int `json:"throttled"`
	Seconds      int `json:"seconds"`
	// MRsNotSynced is the most MRs seen Synced=False at once.
	MRsNotSynced int `json:"mrsNotSynced"`
}

// storm states a rate limit for two polls and watches what the provider
// does: its request rate, and how many MRs go Synced=False.
func (b *bench) storm(ctx context.Context, ns string, rps int) (*storm, error) {
	d := b.stack.Double
	b.logf("429 storm: the double states %d requests a second for two polls", rps)
	if err := d.Admin(ctx, http.MethodPut, "/admin/rate-limit", terdutdouble.RateLimit{RPS: rps, RetryAfter: 1}, nil); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second) // the provider learns the limit from its next answers
	if err := d.Admin(ctx, http.MethodDelete, "/admin/counters", nil, nil); err != nil {
		return nil, err
	}
	st := &storm{Limit: rps}
	for end := time.Now().Add(2 * b.poll); time.Now().Before(end); time.Sleep(5 * time.Second) {
		notSynced := 0
		for _, l := range lists() {
			if err := b.list(ctx, l, ns); err != nil {
				return nil, err
			}
			for _, mg := range l.GetItems() {
				if mg.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionFalse {
					notSynced++
				}
			}
		}
		st.MRsNotSynced = max(st.MRsNotSynced, notSynced)
	}
	var rate terdutdouble.RateStats
	if err := d.Admin(ctx, http.MethodGet, "/admin/rate", nil, &rate); err != nil {
		return nil, err
	}
	st.MaxPerSecond, st.Requests, st.Throttled, st.Seconds = rate.MaxPerSecond, rate.Requests, rate.Throttled, rate.Seconds
	return st, d.Admin(ctx, http.MethodPut, "/admin/rate-limit", terdutdouble.RateLimit{}, nil)
}
