// Package secretcache is the provider's view of Secrets: it caches only the
// Secrets it writes itself (labelled LabelManagedBy), reads those past the
// cache where a stale copy would mint a second key, and watches the Secrets
// provider configs name one key at a time, bounded per namespace and in
// all, so that no tenant can make it hold every Secret of the cluster.
package secretcache
