// Command provider runs provider-terdut: the Crossplane controllers for
// terdut-server's teams, escalation policies, dead man's switches and
// integrations.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	changelogsv1alpha1 "github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"git.ryuvia.com/niklas/provider-terdut/apis"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	tcontroller "git.ryuvia.com/niklas/provider-terdut/internal/controller"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/schedule"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
	"git.ryuvia.com/niklas/provider-terdut/internal/version"
)

type flags struct {
	debug              bool
	leaderElection     bool
	leaseDuration      time.Duration
	renewDeadline      time.Duration
	sync               time.Duration
	poll               time.Duration
	minPoll            time.Duration
	unfair             bool
	pollStateMetric    time.Duration
	maxReconcileRate   int
	maxConcurrent      int
	apiSeats           int
	namespaceWorkers   int
	managementPolicies bool
	safeStart          bool
	changeLogs         bool
	changeLogsSocket   string
	metricsAddr        string
	healthAddr         string
	namespace          string
	listMaxAge         time.Duration
	naive              bool
	maxBackoff         time.Duration
	absenceWait        time.Duration
	pprof              bool
}

func parse(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.BoolVar(&f.debug, "debug", false, "Log at debug level (also controller-runtime's own logs).")
	fs.BoolVar(&f.leaderElection, "leader-election", os.Getenv("LEADER_ELECTION") == "true", "Use leader election (run more than one replica).")
	fs.DurationVar(&f.leaseDuration, "leader-election-lease-duration", 60*time.Second, "How long a standby waits before it takes over from a leader that stopped renewing (a killed one); a leader that stops cleanly hands over at once.")
	fs.DurationVar(&f.renewDeadline, "leader-election-renew-deadline", 50*time.Second, "How long the leader keeps trying to renew before it gives up leading (and exits).")
	fs.DurationVar(&f.sync, "sync", time.Hour, "How often every resource is re-listed from the API server.")
	fs.DurationVar(&f.poll, "poll", time.Minute, "How often each managed resource is checked against terdut-server for drift.")
	fs.DurationVar(&f.minPoll, "min-poll-interval", 10*time.Second, "The shortest poll an MR's crossplane.io/poll-interval annotation may ask for: shorter asks are clamped to it, so no tenant's annotation makes the provider hammer a server.")
	fs.DurationVar(&f.pollStateMetric, "poll-state-metric", 5*time.Second, "How often the managed resource state metrics are recorded.")
	fs.IntVar(&f.maxReconcileRate, "max-reconcile-rate", 100, "Reconciles per second, at most, across all kinds (the Kubernetes client may send five times as many requests per second). At rest each MR needs one per --poll: 1,000 MRs at --poll=1m are 17 a second.")
	fs.IntVar(&f.maxConcurrent, "max-concurrent-reconciles", 15, "Reconciles of one kind at the same time (0: --max-reconcile-rate). terdut-server is protected by its own stated rate limit, which the provider follows.")
	fs.IntVar(&f.namespaceWorkers, "max-concurrent-reconciles-per-namespace", 10, "Reconciles of one kind at the same time for one namespace, at most (0, or not below --max-concurrent-reconciles: no limit): the rest of --max-concurrent-reconciles stay free for the other namespaces, so a burst in one never leaves another's MRs waiting for a worker.")
	fs.IntVar(&f.apiSeats, "max-api-requests-in-flight", 8, "Requests to the Kubernetes API server at once, at most, but watches and leader election's (0: no limit); when all are taken, a freed one goes to the waiting namespace that holds the fewest, so one namespace's burst holds another's requests back by one request, not by hundreds.")
	fs.BoolVar(&f.managementPolicies, "enable-management-policies", true, "Honour spec.managementPolicies (Observe-only import, orphaning).")
	fs.BoolVar(&f.safeStart, "enable-safe-start", true, "Start each kind's controller only once its CRD is established.")
	fs.BoolVar(&f.changeLogs, "enable-changelogs", false, "Send a change log entry for every create, update and delete to the changelogs socket.")
	fs.StringVar(&f.changeLogsSocket, "changelogs-socket-path", "/var/run/changelogs/changelogs.sock", "The changelogs socket.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Where the Prometheus metrics are served; 0 turns them off.")
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", "Where /healthz and /readyz are served; 0 turns them off.")
	fs.DurationVar(&f.listMaxAge, "list-max-age", -1, "How long one list of a team's switches or integrations (and of the teams and users) serves every MR that asks; 0 asks the server for each MR. Default: half of --poll, so drift is seen within 1.5 polls at most.")
	fs.DurationVar(&f.absenceWait, "absence-confirmation", extclient.DefaultAbsenceConfirmation, "A switch or integration its team's list no longer shows is taken as gone (and made again) only if a fresh read this long after still does not show it: longer than your server's lists may lag.")
	fs.DurationVar(&f.maxBackoff, "max-backoff", 10*time.Second, "At most this long between the retries of one managed resource (crossplane-runtime's default is 60s): after an outage everything is back within it.")
	benchmarkFlags(fs, &f)
	fs.BoolVar(&f.pprof, "pprof", false, "Serve Go's profiles at /debug/pprof/ on the metrics address (for an SRE measuring memory or CPU).")
	fs.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", "crossplane-system"), "The provider's own namespace, where it keeps team-scoped keys (env POD_NAMESPACE).")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.maxConcurrent <= 0 {
		f.maxConcurrent = f.maxReconcileRate
	}
	if f.absenceWait > 0 && f.maxBackoff*2 > f.absenceWait {
		return f, fmt.Errorf("--absence-confirmation (%s) must be at least twice --max-backoff (%s): an absence is confirmed by misses at most half of it apart", f.absenceWait, f.maxBackoff)
	}
	if f.renewDeadline >= f.leaseDuration {
		return f, fmt.Errorf("--leader-election-renew-deadline (%s) must be shorter than --leader-election-lease-duration (%s)", f.renewDeadline, f.leaseDuration)
	}
	// NOTE: the floor is for what tenants ask; a --poll below it is the
	// operator's own choice, and lowers it.
	f.minPoll = min(f.minPoll, f.poll)
	if f.listMaxAge < 0 {
		f.listMaxAge = f.poll / 2
	}
	if f.naive {
		// NOTE: naive is only ever set in a benchmark build.
		f.listMaxAge = 0
	}
	return f, nil
}

func main() {
	f, err := parse(os.Args[1:])
	if err != nil {
		// NOTE: the flag package has printed its own errors already.
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "provider-terdut:", err)
		}
		os.Exit(2)
	}
	lessGarbage()
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "provider-terdut:", err)
		os.Exit(1)
	}
}

// defaultGOGC is Go's GOGC for the provider unless its environment sets one.
// Go's default (100) lets the heap grow to twice what is live before it
// collects; most of what is live is the caches, which grow with the MRs.
// Measured at 1,000 MRs (make bench-scale): peak RSS 86.5 MiB at 100, 76.8
// at 50, all Ready and CPU seconds no worse (the caches are small to scan).
const defaultGOGC = 50

// lessGarbage sets defaultGOGC unless GOGC is set.
func lessGarbage() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGOGC)
	}
}

func run(f flags) error {
	zl := zap.New(zap.UseDevMode(f.debug))
	log := logging.Logger(lazyLogger{base: logging.NewLogrLogger(zl.WithName("provider-terdut")), debug: f.debug})
	if f.debug {
		ctrl.SetLogger(zl)
	} else {
		// controller-runtime is very verbose even at info level.
		ctrl.SetLogger(logr.Discard())
	}
	log.Info("Starting", "version", version.Version, "poll", f.poll.String(), "max-reconcile-rate", f.maxReconcileRate, "max-concurrent-reconciles", f.maxConcurrent, "max-api-requests-in-flight", f.apiSeats, "list-max-age", f.listMaxAge.String(), "min-poll-interval", f.minPoll.String(), "fair", !f.unfair, "naive", f.naive)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("cannot get the API server's config: %w", err)
	}
	// NOTE: only the Kubernetes group the provider reads (core/v1: Secrets,
	// Namespaces, Events), not all of client-go's: a scheme of every group
	// is memory for nothing.
	scheme := runtime.NewScheme()
	for what, add := range map[string]func(*runtime.Scheme) error{
		"Kubernetes' core/v1": corev1.AddToScheme, "the provider's APIs": apis.AddToScheme, "CRDs": apiextensionsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("cannot add %s to the scheme: %w", what, err)
		}
	}
	limited := ratelimiter.LimitRESTConfig(cfg, f.maxReconcileRate)
	if f.apiSeats > 0 {
		seats := fair.NewSeats(f.apiSeats)
		limited.Wrap(seats.Transport)
		metrics.Registry.MustRegister(seatsMetrics(seats)...)
	}
	mgr, err := ctrl.NewManager(limited, ctrl.Options{
		Scheme:                     scheme,
		Cache:                      cacheOptions(f.sync),
		NewClient:                  newClient,
		Metrics:                    metricsserver.Options{BindAddress: f.metricsAddr, ExtraHandlers: profiles(f.pprof)},
		HealthProbeBindAddress:     f.healthAddr,
		LeaderElection:             f.leaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-terdut",
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaderElectionNamespace:    f.namespace,
		// NOTE: a leader that stops cleanly (SIGTERM: a rollout, a drain)
		// gives the lease up at once, as Crossplane core does; only a
		// killed one makes the standby wait out the lease.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
	})
	if err != nil {
		return fmt.Errorf("cannot create the controller manager: %w", err)
	}
	if f.healthAddr != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return err
		}
	}

	// NOTE: only the core/v1 client (the full clientset builds a client of
	// every API group), over the manager's HTTP client.
	coreV1, err := corev1client.NewForConfigAndClient(limited, mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("cannot create the core/v1 client: %w", err)
	}

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	checks := adjust.NewChecks()
	quiet := adjust.NewQuietStatus()
	watched := &secretcache.WatchedSecrets{CoreV1: coreV1, Fallback: mgr.GetClient(), Direct: mgr.GetAPIReader()}
	held := schedule.NewHeldRequests()
	metrics.Registry.MustRegister(mrMetrics, stateMetrics, checks, quiet, held, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "provider_terdut_secret_watches",
		Help: "Watches of single Secrets that provider configs name (credentials, CA bundles) running now: one not read for 30 minutes is stopped, at most 1,000 run and at most 50 of one namespace, each keeps only the key it reads, and past them a Secret is read from the API server.",
	}, func() float64 { return float64(watched.Watches()) }))

	o := generic.Options{
		Options: controller.Options{
			Logger:                  log,
			MaxConcurrentReconciles: f.maxConcurrent,
			PollInterval:            f.poll,
			GlobalRateLimiter:       ratelimiter.NewGlobal(f.maxReconcileRate),
			Features:                &feature.Flags{},
			MetricOptions: &controller.MetricOptions{
				PollStateMetricInterval: f.pollStateMetric,
				MRMetrics:               mrMetrics,
				MRStateMetrics:          stateMetrics,
			},
		},
		Servers: &credentials.Servers{
			Kube:       watched,
			Reader:     mgr.GetAPIReader(),
			Clients:    terdut.NewCache(),
			TeamKeys:   &credentials.TeamKeys{Kube: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: f.namespace},
			ListMaxAge: f.listMaxAge,
		},
		Naive:               f.naive,
		Budget:              schedule.Budget{MaxBackoff: f.maxBackoff, NamespaceWorkers: f.namespaceWorkers, Held: held},
		MinPollInterval:     f.minPoll,
		AbsenceConfirmation: f.absenceWait,
		ManagementPolicies:  f.managementPolicies,
		Namespace:           f.namespace,
		Indexes:             &generic.Indexes{},
		Checks:              checks,
		QuietStatus:         quiet,
	}
	if !f.unfair {
		// NOTE: the same burst as crossplane-runtime's global limiter (ten
		// seconds' worth), shared between the namespaces asking at once.
		o.Share = fair.New(float64(f.maxReconcileRate), fair.Options{Burst: 10 * f.maxReconcileRate})
		o.ChangesFirst = schedule.NewChangesFirst(f.poll)
	}
	if f.changeLogs {
		conn, err := grpc.NewClient("unix://"+f.changeLogsSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fmt.Errorf("cannot connect to the changelogs socket %s: %w", f.changeLogsSocket, err)
		}
		o.Features.Enable(feature.EnableAlphaChangeLogs)
		o.ChangeLogOptions = &controller.ChangeLogOptions{
			ChangeLogger: managed.NewGRPCChangeLogger(changelogsv1alpha1.NewChangeLogServiceClient(conn), managed.WithProviderVersion("provider-terdut:"+version.Version)),
		}
	}
	if f.safeStart {
		o.Gate = new(gate.Gate[schema.GroupVersionKind])
		if err := customresourcesgate.Setup(mgr, o.Options); err != nil {
			return fmt.Errorf("cannot set up the CRD gate: %w", err)
		}
	}
	if err := tcontroller.Setup(mgr, o); err != nil {
		return fmt.Errorf("cannot set up the controllers: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// cacheOptions keep what the controllers read and no more: no object's
// managedFields (nothing here reads them; updates without them leave the
// server's as they are), no CRD's schemas (the safe-start gate reads only
// names, versions and conditions) - in a cluster of many providers those are
// most of the cache - and only the Secrets the provider writes (newClient
// reads any other past the cache; provider configs' Secrets are watched one
// by one: secretcache.WatchedSecrets).

func cacheOptions(sync time.Duration) cache.Options {
	return cache.Options{
		SyncPeriod:       &sync,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
			&corev1.Secret{}: secretcache.OwnSecrets(),
		},
	}
}

// newClient is controller-runtime's client, but a Secret its cache does not
// hold is read from the API server, never taken as absent.
func newClient(cfg *rest.Config, o client.Options) (client.Client, error) {
	cached, err := client.New(cfg, o)
	if err != nil {
		return nil, err
	}
	direct, err := client.New(cfg, client.Options{HTTPClient: o.HTTPClient, Scheme: o.Scheme, Mapper: o.Mapper})
	if err != nil {
		return nil, err
	}
	return secretcache.SecretsPastTheCache(cached, direct), nil
}

// seatsMetrics say how many of the provider's requests to the API server
// run and how many wait for a seat (--max-api-requests-in-flight).
func seatsMetrics(s *fair.Seats) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "provider_terdut_api_requests_in_flight",
			Help: "The provider's requests to the Kubernetes API server running now (at most --max-api-requests-in-flight; watches and leases aside).",
		}, func() float64 { taken, _ := s.Counts(); return float64(taken) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "provider_terdut_api_requests_waiting",
			Help: "The provider's requests to the Kubernetes API server waiting for one of the --max-api-requests-in-flight (a freed one goes to the waiting namespace that holds the fewest).",
		}, func() float64 { _, waiting := s.Counts(); return float64(waiting) }),
	}
}

// profiles are Go's pprof handlers, if on.
func profiles(on bool) map[string]http.Handler {
	if !on {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
