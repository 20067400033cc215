//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// alertmanager is a real Alertmanager (built by stack.Build) on loopback,
// with one receiver that reads an Integration's Secret as files.
type alertmanager struct {
	t    *testing.T
	p    *stack.Process
	addr string
	dir  string
	n    int
}

// startAlertmanager writes the config (url_file and credentials_file in dir)
// and starts Alertmanager as NAME, its clustering off.
func startAlertmanager(t *testing.T, name, dir string, port int) *alertmanager {
	t.Helper()
	bin, err := stack.Binary("alertmanager")
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`route:
  receiver: terdut
  group_by: [alertname]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
- name: terdut
  webhook_configs:
  - url_file: %[1]s/url
    send_resolved: false
    http_config:
      authorization: {credentials_file: %[1]s/key}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	am := &alertmanager{t: t, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	am.p, err = env.stack.Start(t.Context(), name, bin, "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "data"), "--web.listen-address="+am.addr, "--cluster.listen-address=", "--log.level=debug")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, name+" ready", func() string {
		rsp, err := http.Get("http://" + am.addr + "/-/ready") //nolint:noctx // A readiness probe in a test.
		if err != nil {
			return err.Error()
		}
		_ = rsp.Body.Close()
		if rsp.StatusCode != http.StatusOK {
			return rsp.Status
		}
		return ""
	})
	return am
}

// alert posts one alert (its own group) to Alertmanager's API.
func (am *alertmanager) alert() {
	am.t.Helper()
	am.n++
	body := fmt.Sprintf(`[{"labels":{"alertname":"TerdutE2E%d","severity":"critical"},"annotations":{"summary":"e2e alert %d"}}]`, am.n, am.n)
	req, _ := http.NewRequestWithContext(am.t.Context(), http.MethodPost, "http://"+am.addr+"/api/v2/alerts", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		am.t.Fatal(err)
	}
	_ = rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		am.t.Fatalf("posting an alert to Alertmanager: %s", rsp.Status)
	}
}

// secretFiles writes the Integration's Secret's url and key as the files
// Alertmanager reads (as a Secret volume would).
func secretFiles(t *testing.T, ns, secret, dir string) {
	t.Helper()
	s := &corev1.Secret{}
	must(t, env.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: secret}, s), "get the webhook Secret")
	for _, k := range []string{"url", "key"} {
		if len(s.Data[k]) == 0 {
			t.Fatalf("Secret %s/%s has no %s", ns, secret, k)
		}
		must(t, os.WriteFile(filepath.Join(dir, k), s.Data[k], 0o600), "write "+k)
	}
}

// received is what the double's ingest counted for an integration.
func received(t *testing.T, id int64) terdutdouble.AlertCount {
	t.Helper()
	var all []terdutdouble.AlertCount
	must(t, admin(http.MethodGet, "/admin/alerts", nil, &all), "read the alerts the double received")
	for _, c := range all {
		if c.IntegrationID == id {
			return c
		}
	}
	return terdutdouble.AlertCount{IntegrationID: id}
}

// TestAlertmanagerDelivers: a real Alertmanager sends alerts to an
// Integration with the url and key from its Secret (url_file,
// credentials_file); the double accepts them only with that integration's
// key. After a kind change rotates the key, the old key is refused, and
// Alertmanager delivers again once the Secret's new files are in place. A
// config pointing at a Secret file that is not there fails clearly.
func TestAlertmanagerDelivers(t *testing.T) {
	ns := "e2e-alertmanager"
	namespace(t, ns, nil)
	scenariof(t, "an Integration's Secret as Alertmanager's url_file and credentials_file -> alerts delivered with that key")
	apply(t, teamYAML(ns, "web", "Alerting Web")+`---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: am, namespace: `+ns+`}
spec:
  forProvider: {teamIdRef: {name: web}, kind: alertmanager, name: am}
  writeConnectionSecretToRef: {name: am-webhook}
`)
	team := &v1alpha1.Team{ObjectMeta: om(ns, "web")}
	in := &v1alpha1.Integration{ObjectMeta: om(ns, "am")}
	ready(t, team)
	first := externalID(t, ready(t, in))
	dir := t.TempDir()
	secretFiles(t, ns, "am-webhook", dir)
	oldURL, _ := os.ReadFile(filepath.Join(dir, "url"))
	oldKey, _ := os.ReadFile(filepath.Join(dir, "key"))
	am := startAlertmanager(t, "alertmanager", dir, 19093+portOffset)
	defer am.p.Stop()

	for range 3 {
		am.alert()
	}
	eventually(t, 60*time.Second, "the alerts at the double", func() string {
		if c := received(t, first); c.Alerts < 3 || c.Refused != 0 {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	})
	c := received(t, first)
	fmt.Printf("    alertmanager delivered %d alerts in %d notifications to integration %d with its key; refused %d\n", c.Alerts, c.Notifications, first, c.Refused)

	scenariof(t, "a kind change rotates the key: the old key is refused; with the Secret's new files Alertmanager delivers again")
	apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: am, namespace: `+ns+`}
spec:
  forProvider: {teamIdRef: {name: web}, kind: webhook, name: am}
  writeConnectionSecretToRef: {name: am-webhook}
`)
	var second int64
	eventually(t, 60*time.Second, "the integration replaced", func() string {
		get(t, in)
		id, _ := strconv.ParseInt(meta.GetExternalName(in), 10, 64)
		s := &corev1.Secret{}
		_ = env.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "am-webhook"}, s)
		if id == first || s.Annotations["terdut.ryuvia.com/integration-id"] != strconv.FormatInt(id, 10) {
			return "not yet"
		}
		second = id
		return ""
	})
	ready(t, in)
	if code := postWebhook(t, string(oldURL), string(oldKey)); code < 400 {
		t.Errorf("the old URL and key after the rotation: %d, want refused", code)
	}
	am.alert() // still the old files: not delivered
	time.Sleep(3 * time.Second)
	if c := received(t, second); c.Notifications != 0 {
		t.Errorf("the new integration got %d notifications before Alertmanager had its key", c.Notifications)
	}
	secretFiles(t, ns, "am-webhook", dir)
	am.alert()
	eventually(t, 60*time.Second, "an alert at the new integration", func() string {
		if c := received(t, second); c.Alerts < 1 || c.Refused != 0 {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	})
	c = received(t, second)
	fmt.Printf("    after the rotation: old key refused; alertmanager delivered %d alerts to integration %d with the new key\n", c.Alerts, second)

	scenariof(t, "an Alertmanager config pointing at a Secret file that is not there: nothing delivered, and the log says which file")
	missing := t.TempDir()
	bad := startAlertmanager(t, "alertmanager-missing", missing, 19094+portOffset)
	before := received(t, second)
	bad.alert()
	log := filepath.Join(env.run, "alertmanager-missing.log")
	eventually(t, 30*time.Second, "Alertmanager's error", func() string {
		b, _ := os.ReadFile(log)
		if !strings.Contains(string(b), "read url_file: open "+filepath.Join(missing, "url")) {
			return "no error logged yet"
		}
		return ""
	})
	bad.p.Stop()
	if after := received(t, second); after != before {
		t.Errorf("with a missing url_file something was delivered: %+v -> %+v", before, after)
	}
	fmt.Printf("    a missing Secret file: Alertmanager logs \"read url_file: open %s: no such file or directory\", nothing delivered\n", filepath.Join(missing, "url"))

	deleteAndWait(t, in)
	deleteAndWait(t, team)
}

// postWebhook posts an Alertmanager payload straight to a webhook URL.
func postWebhook(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"Direct"}}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = rsp.Body.Close()
	return rsp.StatusCode
}
