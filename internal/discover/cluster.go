package discover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// InCluster reads the MRs of every kind in the cluster: those that name the
// provider config ref (a ProviderConfig of pcNamespace, or a
// ClusterProviderConfig) hold the server object their external name names
// (Options.Held); every one's name is taken, and so is every Secret's name
// and every connection Secret an MR names (Options.Taken, "Secret/ns/name").
func InCluster(ctx context.Context, kube client.Reader, ref xpv2.ProviderConfigReference, pcNamespace string) (held map[Key]string, taken map[string]bool, err error) {
	held, taken = map[Key]string{}, map[string]bool{}
	for _, l := range []resource.ManagedList{
		&v1alpha1.TeamList{}, &v1alpha1.EscalationPolicyList{}, &v1alpha1.DeadmanSwitchList{},
		&v1alpha1.IntegrationList{}, &v1alpha1.ServiceAccountList{},
	} {
		if err := kube.List(ctx, l); err != nil {
			return nil, nil, fmt.Errorf("cannot list the cluster's managed resources: %w", err)
		}
		kind := kindOfList(l)
		for _, mg := range l.GetItems() {
			taken[kind+"/"+mg.GetNamespace()+"/"+mg.GetName()] = true
			m, ok := mg.(resource.ModernManaged)
			if !ok {
				continue
			}
			if c := m.GetWriteConnectionSecretToReference(); c != nil {
				taken[secretScope+"/"+mg.GetNamespace()+"/"+c.Name] = true
			}
			r := m.GetProviderConfigReference()
			en := meta.GetExternalName(mg)
			if r == nil || r.Kind != ref.Kind || r.Name != ref.Name || en == "" {
				continue
			}
			if ref.Kind == v1alpha1.ProviderConfigKind && mg.GetNamespace() != pcNamespace {
				continue
			}
			held[Key{Kind: kind, ExternalName: en}] = mg.GetNamespace() + "/" + mg.GetName()
		}
	}
	// NOTE: names only: a Secret of a discovered MR's connection Secret
	// name, whoever made it, would be refused or taken over by the runtime's
	// publisher.
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := kube.List(ctx, secrets); err != nil {
		return nil, nil, fmt.Errorf("cannot list the cluster's Secrets (their names only): %w", err)
	}
	for _, sec := range secrets.Items {
		taken[secretScope+"/"+sec.Namespace+"/"+sec.Name] = true
	}
	return held, taken, nil
}

// secretScope is the Taken prefix of Secret names.
const secretScope = "Secret"

func kindOfList(l resource.ManagedList) string {
	switch l.(type) {
	case *v1alpha1.TeamList:
		return v1alpha1.TeamKind
	case *v1alpha1.EscalationPolicyList:
		return v1alpha1.EscalationPolicyKind
	case *v1alpha1.DeadmanSwitchList:
		return v1alpha1.DeadmanSwitchKind
	case *v1alpha1.IntegrationList:
		return v1alpha1.IntegrationKind
	}
	return v1alpha1.ServiceAccountKind
}

// Write writes r's files under dir, making the folders they need. A file
// already there is replaced.
func Write(dir string, r Result) error {
	for _, f := range r.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// ReadOnly is an HTTP transport that sends GETs only: any other request is
// refused before it leaves, so discovery cannot write to the server. It
// counts what it sent and refused, by method.
type ReadOnly struct {
	Next http.RoundTripper

	mu   sync.Mutex
	sent map[string]int
}

// ErrWrite is what ReadOnly answers a request that would write.
var ErrWrite = errors.New("discovery only reads: a request that could write was refused before it was sent")

// Around is t sending through next (terdut.Options.Wrap).
func (t *ReadOnly) Around(next http.RoundTripper) http.RoundTripper {
	t.Next = next
	return t
}

// RoundTrip sends r if it is a GET.
func (t *ReadOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	if t.sent == nil {
		t.sent = map[string]int{}
	}
	if r.Method != http.MethodGet {
		t.sent["refused "+r.Method]++
		t.mu.Unlock()
		return nil, ErrWrite
	}
	t.sent[r.Method]++
	t.mu.Unlock()
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// Sent is how many requests were sent (and refused) by method, sorted.
func (t *ReadOnly) Sent() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.sent))
	for m, n := range t.sent {
		out = append(out, fmt.Sprintf("%s %d", m, n))
	}
	sort.Strings(out)
	return out
}
