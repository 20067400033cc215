package function

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	protection "github.com/crossplane/crossplane/apis/v2/protection/v1beta1"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

var names = ServerNames{Namespace: "platform-oncall", Name: "terdut", ProviderNamespace: "crossplane-system"}

// defaulted is a server spec as the API server hands it over after the
// XRD's defaults, with only the database set by the user.
func defaulted(opts ...func(*platform.XTerdutServerSpec)) *platform.XTerdutServerSpec {
	s := &platform.XTerdutServerSpec{
		Image:         platform.Image{Repository: "git.ryuvia.com/niklas/terdut-server", Tag: "v0.9.3"},
		Replicas:      ptr.To[int32](1),
		Networking:    platform.Networking{ServicePort: 8080},
		Database:      platform.Database{DSN: new("postgres://terdut@db:5432/terdut"), PasswordSecretRef: &platform.SecretKeyRef{Name: "terdut-db", Key: "password"}},
		Sweeper:       platform.Sweeper{StaleAfter: "6h", ArchiveAfter: "168h"},
		Deadman:       platform.Deadman{Matchers: "alertname=Watchdog", Timeout: "15m", Severity: "critical"},
		Notify:        platform.Notify{RepeatEvery: "15m"},
		OIDC:          platform.OIDC{Name: "SSO", Scopes: "openid profile email", SessionMaxAge: "12h"},
		PasswordLogin: new(true),
		AllowedTeams:  platform.AllowedTeams{Namespaces: v1alpha1.AllowedNamespaces{From: "None"}},
		Bootstrap:     platform.Bootstrap{Username: "admin"},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

func TestEnvironment(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   *platform.XTerdutServerSpec
		want   []corev1.EnvVar
	}{
		"Defaults": {
			reason: "the XRD's defaults and a DSN: the password comes from its Secret, empty settings are left to the server",
			spec:   defaulted(),
			want: []corev1.EnvVar{
				env(EnvListenAddr, ":8080"),
				env(EnvDatabaseDSN, "postgres://terdut@db:5432/terdut"),
				secretEnv(EnvPGPassword, "terdut-db", "password"),
				env(EnvSweeperStaleAfter, "6h"), env(EnvSweeperArchiveAfter, "168h"),
				env(EnvDeadmanMatchers, "alertname=Watchdog"), env(EnvDeadmanTimeout, "15m"), env(EnvDeadmanSeverity, "critical"),
				env(EnvNotifyRepeatEvery, "15m"),
				env(EnvOIDCEnabled, "false"),
				env(EnvPasswordLogin, "true"),
			},
		},
		"EverythingSet": {
			reason: "every setting of the spec reaches the container",
			spec: defaulted(func(s *platform.XTerdutServerSpec) {
				s.Networking = platform.Networking{Hostname: "terdut.example.com", ServicePort: 9090}
				s.Sweeper = platform.Sweeper{StaleAfter: "2h", ArchiveAfter: "24h"}
				s.Deadman = platform.Deadman{Matchers: "alertname=Heartbeat,env=prod", Timeout: "5m", Severity: "warning"}
				s.Notify = platform.Notify{NtfyURL: "http://ntfy.ntfy.svc", FallbackTopic: "ops", RepeatEvery: "30m", TokenSecretRef: &platform.SecretKeyRef{Name: "ntfy", Key: "token"}}
				s.OIDC = platform.OIDC{
					Enabled: true, Issuer: "https://sso.example.com", ClientID: "terdut",
					ClientSecretRef: &platform.SecretKeyRef{Name: "oidc", Key: "client-secret"},
					Name:            "Company SSO", Scopes: "openid email", AllowedGroups: []string{"oncall", "sre"},
					AdminGroup: "sre-leads", SessionMaxAge: "8h",
				}
				s.PasswordLogin = new(false)
			}),
			want: []corev1.EnvVar{
				env(EnvListenAddr, ":9090"),
				env(EnvDatabaseDSN, "postgres://terdut@db:5432/terdut"),
				secretEnv(EnvPGPassword, "terdut-db", "password"),
				env(EnvBaseURL, "https://terdut.example.com"),
				env(EnvSweeperStaleAfter, "2h"), env(EnvSweeperArchiveAfter, "24h"),
				env(EnvDeadmanMatchers, "alertname=Heartbeat,env=prod"), env(EnvDeadmanTimeout, "5m"), env(EnvDeadmanSeverity, "warning"),
				env(EnvNotifyNtfyURL, "http://ntfy.ntfy.svc"), env(EnvNotifyFallbackTopic, "ops"), env(EnvNotifyRepeatEvery, "30m"),
				secretEnv(EnvNotifyToken, "ntfy", "token"),
				env(EnvOIDCEnabled, "true"),
				env(EnvOIDCIssuer, "https://sso.example.com"), env(EnvOIDCClientID, "terdut"),
				secretEnv(EnvOIDCClientSecret, "oidc", "client-secret"),
				env(EnvOIDCName, "Company SSO"), env(EnvOIDCScopes, "openid email"),
				env(EnvOIDCAllowedGroups, "oncall,sre"), env(EnvOIDCAdminGroup, "sre-leads"), env(EnvOIDCSessionMaxAge, "8h"),
				env(EnvPasswordLogin, "false"),
			},
		},
		"Zalando": {
			reason: "a postgresClusterRef: host <cluster>.<namespace>.svc:5432 and the operator's credentials Secret",
			spec: defaulted(func(s *platform.XTerdutServerSpec) {
				s.Database = platform.Database{PostgresClusterRef: &platform.PostgresClusterRef{Name: "terdut-postgres", User: "terdut_app", Database: "incidents"}}
			}),
			want: []corev1.EnvVar{
				env(EnvListenAddr, ":8080"),
				env(EnvDatabaseDSN, "postgres://terdut_app@terdut-postgres.platform-oncall.svc:5432/incidents?sslmode=require"),
				secretEnv(EnvPGPassword, "terdut-app.terdut-postgres.credentials.postgresql.acid.zalan.do", "password"),
				env(EnvSweeperStaleAfter, "6h"), env(EnvSweeperArchiveAfter, "168h"),
				env(EnvDeadmanMatchers, "alertname=Watchdog"), env(EnvDeadmanTimeout, "15m"), env(EnvDeadmanSeverity, "critical"),
				env(EnvNotifyRepeatEvery, "15m"),
				env(EnvOIDCEnabled, "false"),
				env(EnvPasswordLogin, "true"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Environment(names, tc.spec)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nEnvironment(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestServerDeployment(t *testing.T) {
	spec := defaulted(func(s *platform.XTerdutServerSpec) {
		s.Image = platform.Image{Repository: "registry.example.com/terdut", Tag: "v1.0.0", PullPolicy: corev1.PullAlways}
		s.Replicas = ptr.To[int32](0)
		s.Networking.ServicePort = 9090
		s.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		}
	})
	out := Server(names, spec)
	d, ok := out[0].Object.(*appsv1.Deployment)
	if !ok || out[0].Name != NameDeployment {
		t.Fatalf("first composed resource: %s %T, want the Deployment", out[0].Name, out[0].Object)
	}
	probe := func(delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			InitialDelaySeconds: delay, PeriodSeconds: 10, FailureThreshold: 3,
		}
	}
	lbl := map[string]string{"app.kubernetes.io/name": "terdut-server", "app.kubernetes.io/instance": "terdut", "app.kubernetes.io/managed-by": "crossplane"}
	want := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform-oncall", Name: "terdut", Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "terdut-server", "app.kubernetes.io/instance": "terdut"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:            "terdut-server",
					Image:           "registry.example.com/terdut:v1.0.0",
					ImagePullPolicy: corev1.PullAlways,
					Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
					Env:             Environment(names, spec),
					Resources:       *spec.Resources,
					ReadinessProbe:  probe(0),
					LivenessProbe:   probe(10),
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(false)},
				}}},
			},
		},
	}
	if diff := cmp.Diff(want, d, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the Deployment: -want, +got:\n%s", diff)
	}
}

func TestServer(t *testing.T) {
	creds := &v1alpha1.SecretKeySelector{Namespace: "crossplane-system", Name: "platform-oncall.terdut-instance-credentials", Key: "token"}
	sel := v1alpha1.AllowedNamespaces{From: "Selector", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"terdut.ryuvia.com/oncall-tenant": "true"}}}
	cases := map[string]struct {
		reason       string
		spec         *platform.XTerdutServerSpec
		wantNames    []string
		wantEndpoint string
		wantAllowed  v1alpha1.AllowedNamespaces
		wantRoute    map[string]any
	}{
		"InCluster": {
			reason:       "the provider reaches the server at its Service; no gateway listener, no HTTPRoute",
			spec:         defaulted(),
			wantNames:    []string{NameDeployment, NameService, NameServiceAccount, NameProviderConfig, NameDeploymentInUse, NameServiceInUse},
			wantEndpoint: "http://terdut.platform-oncall.svc:8080",
			wantAllowed:  v1alpha1.AllowedNamespaces{From: "None"},
		},
		"EndpointOverrideAndConsent": {
			reason: "an endpoint override reaches the ClusterProviderConfig; allowedTeams becomes its allowedNamespaces",
			spec: defaulted(func(s *platform.XTerdutServerSpec) {
				s.Endpoint = "https://terdut.example.com"
				s.AllowedTeams.Namespaces = sel
			}),
			wantNames:    []string{NameDeployment, NameService, NameServiceAccount, NameProviderConfig, NameDeploymentInUse, NameServiceInUse},
			wantEndpoint: "https://terdut.example.com",
			wantAllowed:  sel,
		},
		"GatewayListener": {
			reason: "a gateway listener attaches an HTTPRoute for the hostname to the Service",
			spec: defaulted(func(s *platform.XTerdutServerSpec) {
				s.Networking.Hostname = "terdut.example.com"
				s.Networking.GatewayListener = "gateways/public/https"
			}),
			wantNames:    []string{NameDeployment, NameService, NameHTTPRoute, NameServiceAccount, NameProviderConfig, NameDeploymentInUse, NameServiceInUse},
			wantEndpoint: "http://terdut.platform-oncall.svc:8080",
			wantAllowed:  v1alpha1.AllowedNamespaces{From: "None"},
			wantRoute: map[string]any{
				"parentRefs": []any{map[string]any{"namespace": "gateways", "name": "public", "sectionName": "https"}},
				"hostnames":  []any{"terdut.example.com"},
				"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": "terdut", "port": int64(8080)}}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := Server(names, tc.spec)
			got := make([]string, 0, len(out))
			byName := map[string]any{}
			for _, c := range out {
				got = append(got, c.Name)
				byName[c.Name] = c.Object
			}
			if diff := cmp.Diff(tc.wantNames, got); diff != "" {
				t.Fatalf("%s\ncomposed: -want, +got:\n%s", tc.reason, diff)
			}
			wantCPC := &v1alpha1.ClusterProviderConfig{
				TypeMeta:   metav1.TypeMeta{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "ClusterProviderConfig"},
				ObjectMeta: metav1.ObjectMeta{Name: "platform-oncall.terdut"},
				Spec: v1alpha1.ClusterProviderConfigSpec{
					ProviderConfigSpec: v1alpha1.ProviderConfigSpec{
						Endpoint:    tc.wantEndpoint,
						Credentials: v1alpha1.ProviderCredentials{Source: "Secret", SecretRef: creds},
					},
					HomeNamespace:     "platform-oncall",
					AllowedNamespaces: tc.wantAllowed,
				},
			}
			if diff := cmp.Diff(wantCPC, byName[NameProviderConfig]); diff != "" {
				t.Errorf("%s\nClusterProviderConfig: -want, +got:\n%s", tc.reason, diff)
			}
			wantSA := &v1alpha1.ServiceAccount{
				TypeMeta:   metav1.TypeMeta{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "ServiceAccount"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "platform-oncall.terdut-instance"},
				Spec: v1alpha1.ServiceAccountSpec{
					ManagedResourceSpec: xpv2.ManagedResourceSpec{
						ProviderConfigReference:          &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "platform-oncall.terdut"},
						WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: "platform-oncall.terdut-instance-credentials"},
					},
					ForProvider: v1alpha1.ServiceAccountParameters{
						Name: "crossplane-provider", Scope: "instance",
						Bootstrap:   &v1alpha1.Bootstrap{Username: "admin"},
						KeyRotation: &v1alpha1.KeyRotation{Interval: &metav1.Duration{Duration: instanceKeyRotation}},
					},
				},
			}
			if diff := cmp.Diff(wantSA, byName[NameServiceAccount]); diff != "" {
				t.Errorf("%s\nbootstrap ServiceAccount: -want, +got:\n%s", tc.reason, diff)
			}
			svc := byName[NameService].(*corev1.Service)
			wantPorts := []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}
			if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" || svc.Namespace != "platform-oncall" || svc.Name != "terdut" {
				t.Errorf("%s\nService %s/%s ports: -want, +got:\n%s", tc.reason, svc.Namespace, svc.Name, diff)
			}
			if tc.wantRoute != nil {
				r := byName[NameHTTPRoute].(*unstructured.Unstructured)
				if diff := cmp.Diff(tc.wantRoute, r.Object["spec"]); diff != "" {
					t.Errorf("%s\nHTTPRoute spec: -want, +got:\n%s", tc.reason, diff)
				}
			}
			st := ServerStatus(names, tc.spec)
			if st.Endpoint != tc.wantEndpoint || st.ProviderConfigName != "platform-oncall.terdut" || st.CredentialsSecretRef.Name != "platform-oncall.terdut-instance-credentials" {
				t.Errorf("%s\nstatus: %+v", tc.reason, st)
			}
		})
	}
}

// A server's Deployment and Service outlive its bootstrap ServiceAccount:
// the ServiceAccount's delete removes the instance account on the running
// server, and only the server's 404 counts as gone.
func TestServerUsages(t *testing.T) {
	n := ServerNames{Namespace: "platform-oncall", Name: "terdut", ProviderNamespace: "crossplane-system"}
	got := map[string]string{}
	for _, c := range serverUsages(n) {
		u, ok := c.Object.(*protection.Usage)
		if !ok {
			t.Fatalf("%s is a %T, want a Usage", c.Name, c.Object)
		}
		b, err := json.Marshal(u.Spec)
		if err != nil {
			t.Fatal(err)
		}
		got[u.Namespace+"/"+u.Name] = string(b)
	}
	by := `"by":{"apiVersion":"terdut.ryuvia.com/v1alpha1","kind":"ServiceAccount","resourceRef":{"name":"platform-oncall.terdut-instance"}}`
	want := map[string]string{
		"crossplane-system/platform-oncall.terdut-instance-uses-deployment": `{"of":{"apiVersion":"apps/v1","kind":"Deployment","resourceRef":{"name":"terdut","namespace":"platform-oncall"}},` + by + `,"replayDeletion":true}`,
		"crossplane-system/platform-oncall.terdut-instance-uses-service":    `{"of":{"apiVersion":"v1","kind":"Service","resourceRef":{"name":"terdut","namespace":"platform-oncall"}},` + by + `,"replayDeletion":true}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Usages: -want, +got:\n%s", diff)
	}
}
