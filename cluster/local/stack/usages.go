package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// noUsagesPath is where core serves the webhook that refuses to delete
// what a Usage holds, when the manifest names no path.
const noUsagesPath = "/validate-no-usages"

// registerNoUsages registers Crossplane's nousages.protection.crossplane.io
// webhook, which makes Usages (deletion ordering) work: the
// ValidatingWebhookConfiguration Crossplane ships in its module
// (cluster/webhookconfigurations/usage.yaml), read as it is, with its client config
// pointed at core's webhook server on 127.0.0.1 instead of an in-cluster
// Service (as ../shared/local-control-plane.md measured). caPEM is the CA
// that signed core's serving certificate.
func (s *Stack) registerNoUsages(ctx context.Context, mod, port string, caPEM []byte) error {
	file := filepath.Join(mod, "cluster", "webhookconfigurations", "usage.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	n := 0
	for doc := range strings.SplitSeq(string(b), "\n---") {
		cfg := &admissionv1.ValidatingWebhookConfiguration{}
		if err := yaml.Unmarshal([]byte(doc), cfg); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if cfg.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		for i := range cfg.Webhooks {
			cc := &cfg.Webhooks[i].ClientConfig
			path := noUsagesPath
			if cc.Service != nil && cc.Service.Path != nil {
				path = *cc.Service.Path
			}
			url := "https://127.0.0.1:" + port + path
			*cc = admissionv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
		}
		if err := s.Kube.Create(ctx, cfg); kerrors.IsAlreadyExists(err) {
			cur := &admissionv1.ValidatingWebhookConfiguration{}
			if err := s.Kube.Get(ctx, client.ObjectKeyFromObject(cfg), cur); err != nil {
				return err
			}
			cur.Webhooks = cfg.Webhooks
			if err := s.Kube.Update(ctx, cur); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s holds no ValidatingWebhookConfiguration", file)
	}
	return nil
}
