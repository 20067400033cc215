package function

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/resource"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// Names of the resources a TerdutServer composes, as the pipeline knows
// them.
const (
	NameDeployment     = "deployment"
	NameService        = "service"
	NameHTTPRoute      = "httproute"
	NameServiceAccount = "service-account"
	NameProviderConfig = "provider-config"
)

const (
	containerName = "terdut-server"
	portName      = "http"

	// zalandoPort is the port of a Zalando cluster's primary Service.
	zalandoPort = 5432
	// zalandoSecretSuffix ends the name of a Zalando credentials Secret:
	// <user>.<cluster>.credentials.postgresql.acid.zalan.do.
	zalandoSecretSuffix = ".credentials.postgresql.acid.zalan.do"
	zalandoPasswordKey  = "password"

	// instanceAccountName is the server-side service account the provider
	// bootstraps and then uses.
	instanceAccountName = "crossplane-provider"

	// instanceKeyRotation rotates the instance key monthly.
	instanceKeyRotation = 720 * time.Hour
)

// An Object is a Kubernetes object with its kind and metadata: a typed one
// or an unstructured one (for kinds whose Go types are not a dependency).
type Object interface {
	runtime.Object
	metav1.Object
}

// A Composed resource: its name in the pipeline and the object desired.
type Composed struct {
	Name   string
	Object Object
}

// ServerNames are the names a TerdutServer claim's resources get.
type ServerNames struct {
	// Namespace of the claim: the Deployment, Service and HTTPRoute live
	// there.
	Namespace string
	// Name of the claim: the Deployment's and Service's name.
	Name string
	// ProviderNamespace holds the bootstrap ServiceAccount and its Secret.
	ProviderNamespace string
}

// ProviderConfig is the ClusterProviderConfig's name: <namespace>.<name>.
func (n ServerNames) ProviderConfig() string { return ProviderConfigName(n.Namespace, n.Name) }

// ProviderConfigName is the name of the ClusterProviderConfig a TerdutServer
// claim <namespace>/<name> composes; a TerdutTeam's serverRef resolves to it.
func ProviderConfigName(namespace, name string) string { return namespace + "." + name }

// ServiceAccount is the bootstrap ServiceAccount MR's name.
func (n ServerNames) ServiceAccount() string { return serverAccount(n.ProviderConfig()) }

// serverAccount is the bootstrap ServiceAccount of the server whose
// ClusterProviderConfig is named providerConfig.
func serverAccount(providerConfig string) string { return providerConfig + "-instance" }

// CredentialsSecret is the instance key's Secret, in the provider's
// namespace: <namespace>.<name>-instance-credentials.
func (n ServerNames) CredentialsSecret() string { return n.ProviderConfig() + "-instance-credentials" }

// Endpoint is the URL the provider reaches the server at.
func Endpoint(n ServerNames, s *platform.XTerdutServerSpec) string {
	if s.Endpoint != "" {
		return s.Endpoint
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", n.Name, n.Namespace, s.Networking.ServicePort)
}

// Server returns what a TerdutServer composes: the server's Deployment and
// Service (and an HTTPRoute when a gateway listener is set) in the claim's
// namespace, the bootstrap ServiceAccount MR in the provider's namespace,
// the ClusterProviderConfig teams use, and the Usages that keep the
// Deployment and Service until the ServiceAccount is gone.
func Server(n ServerNames, s *platform.XTerdutServerSpec) []Composed {
	out := []Composed{
		{Name: NameDeployment, Object: deployment(n, s)},
		{Name: NameService, Object: service(n, s)},
	}
	if s.Networking.GatewayListener != "" {
		out = append(out, Composed{Name: NameHTTPRoute, Object: httpRoute(n, s)})
	}
	out = append(out,
		Composed{Name: NameServiceAccount, Object: bootstrapAccount(n, s)},
		Composed{Name: NameProviderConfig, Object: clusterProviderConfig(n, s)},
	)
	return append(out, serverUsages(n)...)
}

// ServerStatus is what the claim reports of its server.
func ServerStatus(n ServerNames, s *platform.XTerdutServerSpec) platform.XTerdutServerStatus {
	return platform.XTerdutServerStatus{
		Endpoint:           Endpoint(n, s),
		ServiceName:        n.Name,
		ProviderConfigName: n.ProviderConfig(),
		CredentialsSecretRef: &platform.CredentialsSecretRef{
			Namespace: n.ProviderNamespace, Name: n.CredentialsSecret(), Key: v1alpha1.ServiceAccountSecretKeyToken,
		},
	}
}

// selector picks the server's pods.
func selector(n ServerNames) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "terdut-server", "app.kubernetes.io/instance": n.Name}
}

// labels are the selector's and who manages the object.
func labels(n ServerNames) map[string]string {
	l := selector(n)
	l["app.kubernetes.io/managed-by"] = "crossplane"
	return l
}

func deployment(n ServerNames, s *platform.XTerdutServerSpec) *appsv1.Deployment {
	probe := func(initialDelay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: HealthPath, Port: intstr.FromString(portName)}},
			InitialDelaySeconds: initialDelay,
			PeriodSeconds:       10,
			FailureThreshold:    3,
		}
	}
	c := corev1.Container{
		Name:            containerName,
		Image:           s.Image.Repository + ":" + s.Image.Tag,
		ImagePullPolicy: s.Image.PullPolicy,
		Ports:           []corev1.ContainerPort{{Name: portName, ContainerPort: s.Networking.ServicePort, Protocol: corev1.ProtocolTCP}},
		Env:             Environment(n, s),
		ReadinessProbe:  probe(0),
		LivenessProbe:   probe(10),
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(false)},
	}
	if s.Resources != nil {
		c.Resources = *s.Resources
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name, Labels: labels(n)},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(ptr.Deref(s.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector(n)},
			// NOTE: terdut-server is not tested with two instances on one
			// database, so an update stops the old pod before starting
			// the new one.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(n)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
			},
		},
	}
}

// Environment is the server container's environment, from the spec. An
// empty setting is left out, so the server's own default applies.
func Environment(n ServerNames, s *platform.XTerdutServerSpec) []corev1.EnvVar {
	var env []corev1.EnvVar
	set := func(vs ...corev1.EnvVar) {
		for _, v := range vs {
			if v.Value != "" || v.ValueFrom != nil {
				env = append(env, v)
			}
		}
	}
	val := func(name, v string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: v} }
	fromSecret := func(name, secret, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
		}}}
	}
	dsn, pwSecret, pwKey := Database(n, &s.Database)
	set(
		val(EnvListenAddr, ":"+strconv.Itoa(int(s.Networking.ServicePort))),
		val(EnvDatabaseDSN, dsn),
	)
	if pwSecret != "" {
		set(fromSecret(EnvPGPassword, pwSecret, pwKey))
	}
	if s.Networking.Hostname != "" {
		set(val(EnvBaseURL, "https://"+s.Networking.Hostname))
	}
	set(
		val(EnvSweeperStaleAfter, s.Sweeper.StaleAfter),
		val(EnvSweeperArchiveAfter, s.Sweeper.ArchiveAfter),
		val(EnvDeadmanMatchers, s.Deadman.Matchers),
		val(EnvDeadmanTimeout, s.Deadman.Timeout),
		val(EnvDeadmanSeverity, s.Deadman.Severity),
		val(EnvNotifyNtfyURL, s.Notify.NtfyURL),
		val(EnvNotifyFallbackTopic, s.Notify.FallbackTopic),
		val(EnvNotifyRepeatEvery, s.Notify.RepeatEvery),
	)
	if r := s.Notify.TokenSecretRef; r != nil {
		set(fromSecret(EnvNotifyToken, r.Name, r.Key))
	}
	o := s.OIDC
	set(val(EnvOIDCEnabled, strconv.FormatBool(o.Enabled)))
	if o.Enabled && o.ClientSecretRef != nil {
		set(
			val(EnvOIDCIssuer, o.Issuer),
			val(EnvOIDCClientID, o.ClientID),
			fromSecret(EnvOIDCClientSecret, o.ClientSecretRef.Name, o.ClientSecretRef.Key),
			val(EnvOIDCName, o.Name),
			val(EnvOIDCScopes, o.Scopes),
			val(EnvOIDCAllowedGroups, strings.Join(o.AllowedGroups, ",")),
			val(EnvOIDCAdminGroup, o.AdminGroup),
			val(EnvOIDCSessionMaxAge, o.SessionMaxAge),
		)
	}
	set(val(EnvPasswordLogin, strconv.FormatBool(ptr.Deref(s.PasswordLogin, true))))
	return env
}

// Database returns the DSN and the Secret key of the password. For a
// Zalando cluster, both follow postgres-operator's conventions:
// host <cluster>.<namespace>.svc:5432, Secret
// <user>.<cluster>.credentials.postgresql.acid.zalan.do (underscores in the
// user name become dashes there), key "password".
func Database(n ServerNames, d *platform.Database) (dsn, secret, key string) {
	if r := d.PostgresClusterRef; r != nil {
		dsn = fmt.Sprintf("postgres://%s@%s.%s.svc:%d/%s?sslmode=require", r.User, r.Name, n.Namespace, zalandoPort, r.Database)
		return dsn, strings.ReplaceAll(r.User, "_", "-") + "." + r.Name + zalandoSecretSuffix, zalandoPasswordKey
	}
	if d.DSN != nil {
		dsn = *d.DSN
	}
	if r := d.PasswordSecretRef; r != nil {
		secret, key = r.Name, r.Key
	}
	return dsn, secret, key
}

func service(n ServerNames, s *platform.XTerdutServerSpec) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name, Labels: labels(n)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector(n),
			Ports: []corev1.ServicePort{{
				Name: portName, Port: s.Networking.ServicePort, TargetPort: intstr.FromString(portName), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// httpRoute attaches the Service to the Gateway listener
// <namespace>/<gateway>[/<listener>] for the hostname.
func httpRoute(n ServerNames, s *platform.XTerdutServerSpec) *unstructured.Unstructured {
	parts := strings.Split(s.Networking.GatewayListener, "/")
	parent := map[string]any{"namespace": parts[0], "name": parts[1]}
	if len(parts) == 3 {
		parent["sectionName"] = parts[2]
	}
	l := map[string]any{}
	for k, v := range labels(n) {
		l[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "HTTPRoute",
		"metadata":   map[string]any{"namespace": n.Namespace, "name": n.Name, "labels": l},
		"spec": map[string]any{
			"parentRefs": []any{parent},
			"hostnames":  []any{s.Networking.Hostname},
			"rules": []any{map[string]any{
				"backendRefs": []any{map[string]any{"name": n.Name, "port": int64(s.Networking.ServicePort)}},
			}},
		},
	}}
}

// bootstrapAccount is the instance ServiceAccount the provider registers
// on the fresh server and keeps its key in CredentialsSecret.
func bootstrapAccount(n ServerNames, s *platform.XTerdutServerSpec) *v1alpha1.ServiceAccount {
	return &v1alpha1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ServiceAccountKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ProviderNamespace, Name: n.ServiceAccount()},
		Spec: v1alpha1.ServiceAccountSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				ProviderConfigReference:          &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: n.ProviderConfig()},
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: n.CredentialsSecret()},
			},
			ForProvider: v1alpha1.ServiceAccountParameters{
				Name:        instanceAccountName,
				Scope:       "instance",
				Bootstrap:   &v1alpha1.Bootstrap{Username: s.Bootstrap.Username, Email: s.Bootstrap.Email},
				KeyRotation: keyRotation(s.KeyRotation),
			},
		},
	}
}

// keyRotation is the instance key's rotation: the claim's interval (a
// month unless it says otherwise) and its rotation request.
func keyRotation(k platform.ServerKeyRotation) *v1alpha1.KeyRotation {
	interval := k.Interval
	if interval == nil {
		interval = &metav1.Duration{Duration: instanceKeyRotation}
	}
	return &v1alpha1.KeyRotation{Interval: interval, RotationRequest: k.RotationRequest}
}

// ObservedKeyRotation is the instance key's rotation as the bootstrap
// ServiceAccount reports it; nil before it exists.
func ObservedKeyRotation(observed map[resource.Name]resource.ObservedComposed) *platform.ServerKeyRotationStatus {
	oc, ok := observed[NameServiceAccount]
	if !ok || oc.Resource == nil {
		return nil
	}
	at := &v1alpha1.ServiceAccount{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(oc.Resource.Object, at); err != nil {
		return nil
	}
	o := at.Status.AtProvider
	if o.NextRotationAt == nil && o.LastRotationRequest == "" {
		return nil
	}
	return &platform.ServerKeyRotationStatus{NextRotationAt: o.NextRotationAt, LastRotationRequest: o.LastRotationRequest}
}

func clusterProviderConfig(n ServerNames, s *platform.XTerdutServerSpec) *v1alpha1.ClusterProviderConfig {
	return &v1alpha1.ClusterProviderConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ClusterProviderConfigKind},
		ObjectMeta: metav1.ObjectMeta{Name: n.ProviderConfig()},
		Spec: v1alpha1.ClusterProviderConfigSpec{
			ProviderConfigSpec: v1alpha1.ProviderConfigSpec{
				Endpoint: Endpoint(n, s),
				Credentials: v1alpha1.ProviderCredentials{
					Source: xpv2.CredentialsSourceSecret,
					SecretRef: &v1alpha1.SecretKeySelector{
						Namespace: n.ProviderNamespace, Name: n.CredentialsSecret(),
						Key: v1alpha1.ServiceAccountSecretKeyToken,
					},
				},
			},
			HomeNamespace:     n.Namespace,
			AllowedNamespaces: s.AllowedTeams.Namespaces,
		},
	}
}
