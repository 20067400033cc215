// Package adjust holds every change this provider makes to the behaviour of
// crossplane-runtime's managed reconciler. Each is a wrapper around the
// runtime's external client, its manager or its client, applied in
// generic.Setup; a kind's own code never sees them.
//
//	what the runtime does                  | what we change                              | why                                         | shown by
//	---------------------------------------+---------------------------------------------+---------------------------------------------+---------------------------------------------
//	sets Ready=Creating after any Create   | Remembered: a refusal Create met is what    | a reason Create sets never reaches the user | TestRefusalAtAdoptTimeStaysOnReady
//	error, dropping the reason Create set  | Observe answers for RefusalHold             | (crossplane-runtime#285, #832)              | (generic), TestBootstrapStateLostReaches…
//	writes status.observedGeneration on no | KeepingGenerations: set it once a reconcile | kubectl wait and GitOps tools compare it    | TestObservedGenerationFollowsSuccess
//	managed resource                       | found or made the object as the spec says   | with metadata.generation (crossplane#4655)  | (generic); the e2e waits on it
//	writes the MR to add its finalizer     | FinalizedOnCreate: added in memory; the     | 5,000 fewer API writes at 5,000 MRs         | TestCreatingWritesTheMRTwice,
//	before every Create                    | create-pending update carries it            |                                             | TestTheFinalizerIsAddedOnlyBeforeACreate
//	sends a status update at the end of    | QuietStatus: an unchanged status is not     | those updates took most API server CPU at   | TestAnUnchangedStatusIsNotSent,
//	every reconcile, and Creating after a  | sent; the post-create status is held back   | 5,000 MRs (status_updates_skipped_total)    | TestTheCreatingStatusIsHeldBack
//	create                                 | until the next one supersedes it            |                                             |
//	observes a new object only on the next | FollowUp: observed in the same turn, once   | the next reconcile waits for a fair-share   | TestACreatedMRIsObservedInTheSameTurn
//	reconcile, after a backoff             | the cache holds the create's write          | slot seconds away under a burst             |
//	creates the connection Secret empty    | NothingToPublish: no empty Secret; the      | 1,250 fewer writes at 5,000 MRs, no         | TestNoEmptyConnectionSecretBeforeCreate
//	before the object exists               | kind's Create writes it                     | unlabelled Secret the cache cannot hold     |
//	wakes an MR on its own annotation      | DesiredStateChanged: the runtime's and the  | a third of the reconcile budget at 5,000    | TestTheReconcilersOwnWritesDoNotWakeTheMR,
//	writes (resource.DesiredStateChanged)  | kind's own marks are not events             | MRs                                         | TestTheAttemptMarksDoNotWakeTheMR
//	lists every MR with copies for its     | ListsUncopied: the state recorder lists the | peak RSS at its 160 MiB target at 5,000 MRs | TestTheStateMetricsListTheCacheUncopied
//	state metrics every 5 s                | cache's objects                             |                                             |
//	counts no checks against the server    | Counted: provider_terdut_checks_total by    | fewer checks than MRs per poll means drift  | TestChecksCountObserves
//	                                       | kind and result                             | goes unseen within a poll                   |
//
// No upstream issue is known for the rows without one.
//
// Where the runtime has an option for a behaviour, generic.Setup uses it
// (managed.WithInitializers, WithReferenceResolver, WithPollInterval,
// WithMinPollInterval, WithDeterministicExternalName,
// WithManagementPolicies). The rows above have none that fits: the runtime
// takes no connection publisher and no status client but the manager's
// (so QuietStatus and NothingToPublish wrap the manager), and its
// WithFinalizer is called without the observation, so it cannot tell an MR
// about to be created (whose create-pending update carries the finalizer)
// from one whose object exists (FinalizedOnCreate wraps the external
// client). Each chain is built in one function that lists its layers one
// per line: generic's Connector.adjusted (the external client),
// adjustedManager and layered (the reconciler).
package adjust
