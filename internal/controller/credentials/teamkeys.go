package credentials

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
	"git.ryuvia.com/niklas/provider-terdut/internal/teamkey"
)

// Labels and keys of the team-key Secrets in the provider's namespace.
const (
	LabelTeamID         = "terdut.ryuvia.com/team-id"
	LabelProviderConfig = "terdut.ryuvia.com/provider-config"
	AnnotationConfig    = "terdut.ryuvia.com/provider-config-id"
	// AnnotationRevokeKeyID names keys that were replaced and are still
	// to be revoked (comma-separated): a revocation that failed once is
	// tried again, never forgotten.
	AnnotationRevokeKeyID = "terdut.ryuvia.com/revoke-key-id"
	// AnnotationMinting says a key is being minted on the named account:
	// found by the next mint, that mint's key may be valid and in no
	// Secret (see mint).
	AnnotationMinting = "terdut.ryuvia.com/minting-on-account"

	keyToken     = teamkey.Key
	keyAccountID = "account-id"
	keyKeyID     = "key-id"
	keyEndpoint  = "endpoint"
	keyMintedAt  = "minted-at"
	// AnnotationRotationRequest is the Team's keyRotation.rotationRequest
	// the key in the Secret was minted for.
	AnnotationRotationRequest = "terdut.ryuvia.com/rotation-request"

	// remintEvery bounds re-minting a team key answered with 401, so a
	// server that refuses every key is not asked for a new one per request.
	remintEvery = time.Minute

	// freshFor is how long a key this process wrote serves the team's
	// other children without a read of its Secret (the cache has seen the
	// Secret by then).
	freshFor = 5 * time.Second
)

const (
	errGetTeamKey    = "cannot get the team key Secret %s/%s"
	errMintTeamKey   = "cannot mint a team-scoped key for team %d"
	errWriteTeamKey  = "cannot write the team key Secret %s/%s"
	errRevokeTeamKey = "cannot remove the team-scoped service account of team %d"
	errRevokeOldKey  = "cannot revoke the replaced key %d of team %d"
	errTooSoon       = "the key of team %d was re-minted less than a minute ago and is refused again: not re-minting in a loop"
)

// TeamKeys keeps one team-scoped key per (provider config, team), minted on
// first need with the config's instance key and kept in a Secret in the
// provider's own namespace, never in a tenant's.
type TeamKeys struct {
	Kube client.Client
	// Reader reads past the cache before a key is minted: a Secret written
	// a moment ago may not be in the cache yet. Kube when nil.
	Reader    client.Reader
	Namespace string

	mu       sync.Mutex
	reminted map[string]time.Time
	// minting lets one key per team be minted at a time: children of one
	// team reconciled at once would each mint one otherwise. Other teams'
	// keys are minted meanwhile.
	minting map[string]*sync.Mutex
	// written is the key each team's Secret was last given here, and when.
	written map[string]writtenKey
	// now is time.Now, but for tests.
	now func() time.Time
}

type writtenKey struct {
	token terdut.Secret
	at    time.Time
}

// fresh is the key this process wrote to the Secret name within freshFor;
// empty if none.
func (k *TeamKeys) fresh(name string) terdut.Secret {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w, ok := k.written[name]; ok && time.Since(w.at) < freshFor {
		return w.token
	}
	delete(k.written, name)
	return ""
}

// wrote records tok as the key just written to the Secret name; an empty
// tok forgets it. Keys older than freshFor are forgotten meanwhile, so only
// the last moments' keys are kept.
func (k *TeamKeys) wrote(name string, tok terdut.Secret) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for n, w := range k.written {
		if time.Since(w.at) >= freshFor {
			delete(k.written, n)
		}
	}
	if tok == "" {
		delete(k.written, name)
		return
	}
	if k.written == nil {
		k.written = map[string]writtenKey{}
	}
	k.written[name] = writtenKey{token: tok, at: time.Now()}
}

// lock holds the minting lock of one team's key until the returned func.
func (k *TeamKeys) lock(name string) func() {
	k.mu.Lock()
	if k.minting == nil {
		k.minting = map[string]*sync.Mutex{}
	}
	m, ok := k.minting[name]
	if !ok {
		m = &sync.Mutex{}
		k.minting[name] = m
	}
	k.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// configHash names a provider config and its server in Secret names and
// labels.
func configHash(cfg Config) string { return teamkey.ConfigHash(cfg.ID(), cfg.Spec.Endpoint) }

// SecretName is the deterministic name of a team's key Secret.
func SecretName(cfg Config, teamID int64) string {
	return teamkey.SecretName(cfg.ID(), cfg.Spec.Endpoint, teamID)
}

// TeamAccountPrefix begins the name of every team's service account on the
// server. It is the provider's: no ServiceAccount MR may use it.
const TeamAccountPrefix = "crossplane-team-"

// AccountName is the name of a team's service account on the server.
func AccountName(teamID int64) string { return TeamAccountPrefix + extclient.FormatID(teamID) }

const errForeignTeamAccount = "service account %q on the server has scope %q%s, not scope %q of team %d: it is not the provider's key account of team %d, and no key is minted on it. Delete or rename it on the server"

// teamAccountFits refuses an account of a team key's name that is not
// team-scoped to that team: minting on it would hand the team's children a
// key of another team, or of the whole server.
func teamAccountFits(teamID int64) func(*terdut.ServiceAccount) error {
	return func(sa *terdut.ServiceAccount) error {
		if sa.Scope == terdut.ScopeTeam && sa.TeamID != nil && *sa.TeamID == teamID {
			return nil
		}
		return errors.Errorf(errForeignTeamAccount, sa.Name, sa.Scope, OfTeam(sa.TeamID), terdut.ScopeTeam, teamID, teamID)
	}
}

// OfTeam says which team an account belongs to, for messages: " of team
// N", or nothing for an account of no team.
func OfTeam(teamID *int64) string {
	if teamID == nil {
		return ""
	}
	return " of team " + extclient.FormatID(*teamID)
}

// Options returns client options for teamID's key, minting it first when
// there is none (and again after a 401), each time only if mayMint allows
// it. base carries the config's endpoint, CA and timeout.
func (k *TeamKeys) Options(ctx context.Context, cfg Config, base terdut.Options, instance *terdut.Client, teamID int64, mayMint func(context.Context) error) (terdut.Options, error) {
	// NOTE: from the cache only: when it has no key, mintIfMissing reads
	// past it, under the team's lock, before it mints. Reading past it here
	// too cost a second read of the API server for each child of a team
	// created a moment ago (at 5,000 MRs, most of the API server's reads).
	s, err := k.secret(ctx, secretcache.CachedOnly(k.Kube), cfg, teamID)
	tok := token(s)
	if fresh := k.fresh(SecretName(cfg, teamID)); fresh != "" && err == nil {
		// NOTE: a key this process wrote a moment ago (a rotation) is
		// newer than the cache may show.
		tok = fresh
	}
	if err == nil && tok == "" {
		tok, err = k.mintIfMissing(ctx, cfg, instance, teamID, mayMint)
	}
	if err == nil && len(pendingRevocations(s)) > 0 {
		err = k.revokePending(ctx, cfg, instance, teamID)
	}
	if err != nil {
		return terdut.Options{}, err
	}
	base.Token = tok
	// NOTE: Refresh is asked when the key it last handed out (first tok)
	// is refused: a newer one in the Secret (a rotation) is taken, and
	// only the refused one itself is minted anew.
	var mu sync.Mutex
	inUse := tok
	base.Refresh = func(ctx context.Context) (terdut.Secret, error) {
		mu.Lock()
		refused := inUse
		mu.Unlock()
		next, err := k.remint(ctx, cfg, instance, teamID, refused, mayMint)
		if err == nil {
			mu.Lock()
			inUse = next
			mu.Unlock()
		}
		return next, err
	}
	return base, nil
}

// secret is the team's key Secret as r reads it; nil when there is none. A
// Secret of that name that records another provider config or endpoint is
// an error: it is never used, written or deleted.
func (k *TeamKeys) secret(ctx context.Context, r client.Reader, cfg Config, teamID int64) (*corev1.Secret, error) {
	return k.secretNamed(ctx, r, cfg, SecretName(cfg, teamID))
}

func (k *TeamKeys) secretNamed(ctx context.Context, r client.Reader, cfg Config, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: k.Namespace, Name: name}, s)
	if kerrors.IsNotFound(err) {
		return nil, nil //nolint:nilnil // No Secret is a state, not an error.
	}
	if err != nil {
		return nil, errors.Wrapf(err, errGetTeamKey, k.Namespace, name)
	}
	if !recordedFor(s, cfg) {
		return nil, errors.Errorf(errForeignTeamKey, k.Namespace, name, cfg.Kind, cfg.Name)
	}
	return s, nil
}

const errForeignTeamKey = "team key Secret %s/%s was written for another provider config or endpoint than %s %q: it is neither used, written nor deleted for this one"

// recordedFor reports whether team key Secret s was written for cfg: its
// recorded provider config and endpoint are cfg's. Its name is derived from
// both, but a name is only a hash: the key goes only where it was minted.
func recordedFor(s *corev1.Secret, cfg Config) bool {
	return s.Annotations[AnnotationConfig] == cfg.ID() && string(s.Data[keyEndpoint]) == cfg.Spec.Endpoint
}

// carryOver moves a team key a release before the full-length Secret names
// kept under the legacy name to the current one (its recorded provider
// config and endpoint checked), so an upgrade neither re-mints every team's
// key nor leaves the old ones valid in Secrets nobody reads. It returns the
// key, or nothing when there is no legacy Secret of cfg's.
func (k *TeamKeys) carryOver(ctx context.Context, cfg Config, teamID int64) (terdut.Secret, error) {
	// NOTE: from the cache only: legacy Secrets are old and carry the
	// provider's label, so the cache holds them; a read past it would cost
	// every team's first mint a second read of the API server. One the
	// cache missed is left to the team's Revoke, which deletes it too.
	old, err := k.secretNamed(ctx, secretcache.CachedOnly(k.Kube), cfg, legacySecretName(cfg, teamID))
	if err != nil || token(old) == "" {
		// NOTE: a legacy name holding another config's Secret is not
		// this team's key: it is left alone, and a key is minted.
		return "", nil //nolint:nilerr // Only a Secret of cfg's is carried over.
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: SecretName(cfg, teamID), Labels: old.Labels, Annotations: old.Annotations}, Data: old.Data}
	s.Labels[LabelProviderConfig] = configHash(cfg)
	if err := k.Kube.Create(ctx, s); err != nil {
		return "", errors.Wrapf(err, errWriteTeamKey, k.Namespace, s.Name)
	}
	k.wrote(s.Name, token(s))
	if err := k.Kube.Delete(ctx, old); err != nil && !kerrors.IsNotFound(err) {
		return "", errors.Wrapf(err, errWriteTeamKey, k.Namespace, old.Name)
	}
	return token(s), nil
}

// legacySecretName is the name releases before the full-length hash kept a
// team's key Secret under.
func legacySecretName(cfg Config, teamID int64) string {
	return teamkey.LegacySecretName(cfg.ID(), cfg.Spec.Endpoint, teamID)
}

// token is the key a team key Secret holds; empty when there is none.
func token(s *corev1.Secret) terdut.Secret {
	if s == nil {
		return ""
	}
	return terdut.Secret(s.Data[keyToken])
}

// mintIfMissing mints the team's first key unless there is one already:
// written here a moment ago (while this child waited for the team's lock),
// or, read past the cache, by a reconcile the cache has not seen.
//
// NOTE: a team's children come at once, and each waited for the lock and
// then read the Secret past the cache in turn: beside a burst of another
// namespace, a third of a second for a team's third child.
func (k *TeamKeys) mintIfMissing(ctx context.Context, cfg Config, instance *terdut.Client, teamID int64, mayMint func(context.Context) error) (terdut.Secret, error) {
	name := SecretName(cfg, teamID)
	defer k.lock(name)()
	if tok := k.fresh(name); tok != "" {
		return tok, nil
	}
	s, err := k.secret(ctx, PastCache(k.Reader, k.Kube), cfg, teamID)
	if tok := token(s); err != nil || tok != "" {
		return tok, err
	}
	if s == nil {
		if tok, err := k.carryOver(ctx, cfg, teamID); err != nil || tok != "" {
			return tok, err
		}
	}
	if err := mayMint(ctx); err != nil {
		return "", err
	}
	return k.mint(ctx, cfg, instance, teamID, s, "")
}

func (k *TeamKeys) remint(ctx context.Context, cfg Config, instance *terdut.Client, teamID int64, refused terdut.Secret, mayMint func(context.Context) error) (terdut.Secret, error) {
	name := SecretName(cfg, teamID)
	defer k.lock(name)()
	s, err := k.secret(ctx, PastCache(k.Reader, k.Kube), cfg, teamID)
	if err != nil {
		return "", err
	}
	if tok := token(s); tok != "" && tok != refused {
		// NOTE: the key was replaced (a rotation) since this client got
		// it: the Secret holds the new one, nothing is minted.
		return tok, nil
	}
	k.mu.Lock()
	if k.reminted == nil {
		k.reminted = map[string]time.Time{}
	}
	if last, ok := k.reminted[name]; ok && time.Since(last) < remintEvery {
		k.mu.Unlock()
		return "", errors.Errorf(errTooSoon, teamID)
	}
	k.reminted[name] = time.Now()
	k.mu.Unlock()
	// NOTE: under the team's lock, as Revoke takes it: a Team that goes
	// meanwhile either sees this key and revokes it, or refuses it here.
	if err := mayMint(ctx); err != nil {
		return "", err
	}
	request := ""
	if s != nil {
		request = s.Annotations[AnnotationRotationRequest]
	}
	return k.mint(ctx, cfg, instance, teamID, s, request)
}

// A TeamKeyState is what a team's key Secret says of its key.
type TeamKeyState struct {
	// MintedAt is when the key was minted (zero: a Secret written before
	// it was recorded).
	MintedAt time.Time
	// Request is the rotation request it was minted for.
	Request string
}

// State is the team's key as its Secret (through the cache) says; false
// when no key is kept.
func (k *TeamKeys) State(ctx context.Context, cfg Config, teamID int64) (TeamKeyState, bool, error) {
	s, err := k.secret(ctx, k.Kube, cfg, teamID)
	if err != nil || token(s) == "" {
		return TeamKeyState{}, false, err
	}
	at, _ := time.Parse(time.RFC3339, string(s.Data[keyMintedAt]))
	return TeamKeyState{MintedAt: at, Request: s.Annotations[AnnotationRotationRequest]}, true, nil
}

// Rotate mints a new key of the team and writes it in place of the kept
// one, which is then revoked; request is the rotation request it answers.
// A team with no key kept has nothing to rotate.
func (k *TeamKeys) Rotate(ctx context.Context, cfg Config, instance *terdut.Client, teamID int64, request string, mayMint func(context.Context) error) error {
	defer k.lock(SecretName(cfg, teamID))()
	s, err := k.secret(ctx, PastCache(k.Reader, k.Kube), cfg, teamID)
	if err != nil || token(s) == "" {
		return err
	}
	if err := mayMint(ctx); err != nil {
		return err
	}
	_, err = k.mint(ctx, cfg, instance, teamID, s, request)
	return err
}

func (k *TeamKeys) clock() time.Time {
	if k.now != nil {
		return k.now()
	}
	return time.Now()
}

// mint creates (or adopts) the team's service account, mints a key on it and
// writes it to the team's Secret before anything uses it: into cur, read
// past the cache, or a new Secret when cur is nil.
//
// The Secret says a mint is under way (AnnotationMinting) before the key is
// asked for: a process killed after the server made the key but before the
// Secret holds it would leave a valid key nobody holds, and the server
// cannot list an account's keys to find it. The next mint that finds the
// mark (under the team's lock, so never one of this process under way)
// deletes the team's account, and every key on it, and starts afresh.
func (k *TeamKeys) mint(ctx context.Context, cfg Config, instance *terdut.Client, teamID int64, cur *corev1.Secret, request string) (terdut.Secret, error) {
	s := cur
	if s == nil {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: SecretName(cfg, teamID)}}
	}
	if s.Annotations[AnnotationMinting] != "" {
		if err := k.resetAccount(ctx, instance, teamID, s); err != nil {
			return "", err
		}
	}
	acct := AccountName(teamID)
	sa, _, err := extclient.AdoptOrCreate(ctx, extclient.Adopter{}, extclient.Natural[terdut.ServiceAccount]{
		Kind: "service account", Name: acct,
		Lookup: func(ctx context.Context) (*terdut.ServiceAccount, error) {
			return instance.GetServiceAccountByName(ctx, acct)
		},
		Create: func(ctx context.Context) (*terdut.ServiceAccount, error) {
			return instance.CreateServiceAccount(ctx, terdut.ServiceAccount{Name: acct, Scope: terdut.ScopeTeam, TeamID: &teamID})
		},
		ID:   func(sa *terdut.ServiceAccount) int64 { return sa.ID },
		Fits: teamAccountFits(teamID),
	})
	if err != nil {
		return "", errors.Wrapf(err, errMintTeamKey, teamID)
	}
	replaced := keyOf(cur)
	pending := pendingRevocations(cur)
	s.Labels = map[string]string{secretcache.LabelManagedBy: secretcache.ManagedBy, LabelTeamID: extclient.FormatID(teamID), LabelProviderConfig: configHash(cfg)}
	s.Annotations = map[string]string{AnnotationConfig: cfg.ID(), AnnotationMinting: extclient.FormatID(sa.ID)}
	if len(pending) > 0 {
		s.Annotations[AnnotationRevokeKeyID] = formatIDs(pending)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[keyEndpoint] = []byte(cfg.Spec.Endpoint)
	if err := k.write(ctx, s); err != nil {
		return "", err
	}
	key, err := instance.MintKey(ctx, sa.ID)
	if err != nil {
		return "", errors.Wrapf(err, errMintTeamKey, teamID)
	}
	if replaced.account == sa.ID && replaced.key != 0 && replaced.key != key.ID {
		pending = append(pending, replaced.key)
	}
	delete(s.Annotations, AnnotationMinting)
	if len(pending) > 0 {
		s.Annotations[AnnotationRevokeKeyID] = formatIDs(pending)
	}
	if request != "" {
		s.Annotations[AnnotationRotationRequest] = request
	}
	s.Data = map[string][]byte{
		keyToken:     []byte(key.Key.Reveal()),
		keyAccountID: []byte(extclient.FormatID(sa.ID)),
		keyKeyID:     []byte(strconv.FormatInt(key.ID, 10)),
		keyEndpoint:  []byte(cfg.Spec.Endpoint),
		keyMintedAt:  []byte(k.clock().UTC().Format(time.RFC3339)),
	}
	if err := k.write(ctx, s); err != nil {
		// NOTE: nobody holds the new key: it must not stay valid either.
		_ = instance.RevokeKey(ctx, sa.ID, key.ID)
		return "", err
	}
	k.wrote(s.Name, key.Key)
	// NOTE: only once the new key is written: the keys it replaces (on the
	// same account) are revoked, so no key stays valid that nobody holds.
	// One that cannot be revoked now stays named in the Secret, and the
	// next use of the team's key tries again (Options).
	_ = k.revokeIn(ctx, instance, s, teamID)
	return key.Key, nil
}

// write creates s, or updates it once it exists (it has a resource version).
func (k *TeamKeys) write(ctx context.Context, s *corev1.Secret) error {
	var err error
	if s.ResourceVersion == "" {
		err = k.Kube.Create(ctx, s)
	} else {
		err = k.Kube.Update(ctx, s)
	}
	return errors.Wrapf(err, errWriteTeamKey, k.Namespace, s.Name)
}

// resetAccount deletes the team's key account (and so every key on it),
// after a mint whose key may have been made and never written: the account
// found by its name, or else the one the Secret s marked (a lookup by name
// that misses it is no proof it is gone).
func (k *TeamKeys) resetAccount(ctx context.Context, instance *terdut.Client, teamID int64, s *corev1.Secret) error {
	sa, err := instance.GetServiceAccountByName(ctx, AccountName(teamID))
	if err != nil {
		return errors.Wrapf(err, errRevokeTeamKey, teamID)
	}
	var accounts []int64
	if sa != nil {
		if err := teamAccountFits(teamID)(sa); err != nil {
			return err
		}
		accounts = append(accounts, sa.ID)
	}
	for _, id := range dedupe(append(accounts, recordedAccounts(s)...)) {
		if err := instance.DeleteServiceAccount(ctx, id); err != nil && !terdut.IsNotFound(err) {
			return errors.Wrapf(err, errRevokeTeamKey, teamID)
		}
	}
	return nil
}

// revokePending revokes the replaced keys the team's Secret still names,
// read past the cache under the team's minting lock.
func (k *TeamKeys) revokePending(ctx context.Context, cfg Config, instance *terdut.Client, teamID int64) error {
	defer k.lock(SecretName(cfg, teamID))()
	s, err := k.secret(ctx, PastCache(k.Reader, k.Kube), cfg, teamID)
	if err != nil || s == nil {
		return err
	}
	return k.revokeIn(ctx, instance, s, teamID)
}

// revokeIn revokes the replaced keys s names and writes back those that
// are left.
func (k *TeamKeys) revokeIn(ctx context.Context, instance *terdut.Client, s *corev1.Secret, teamID int64) error {
	pending := pendingRevocations(s)
	if len(pending) == 0 {
		return nil
	}
	acct := keyOf(s).account
	var left []int64
	var first error
	for _, id := range pending {
		if err := instance.RevokeKey(ctx, acct, id); err != nil && !terdut.IsNotFound(err) {
			left = append(left, id)
			if first == nil {
				first = errors.Wrapf(err, errRevokeOldKey, id, teamID)
			}
		}
	}
	if len(left) == len(pending) {
		return first
	}
	if len(left) == 0 {
		delete(s.Annotations, AnnotationRevokeKeyID)
	} else {
		s.Annotations[AnnotationRevokeKeyID] = formatIDs(left)
	}
	if err := k.Kube.Update(ctx, s); err != nil {
		return errors.Wrapf(err, errWriteTeamKey, s.Namespace, s.Name)
	}
	return first
}

// pendingRevocations are the replaced keys a team key Secret still names.
func pendingRevocations(s *corev1.Secret) []int64 {
	if s == nil || s.Annotations[AnnotationRevokeKeyID] == "" {
		return nil
	}
	var ids []int64
	for f := range strings.SplitSeq(s.Annotations[AnnotationRevokeKeyID], ",") {
		if id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil && id > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

func formatIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = extclient.FormatID(id)
	}
	return strings.Join(parts, ",")
}

// keyRef names a key of a team's account.
type keyRef struct{ account, key int64 }

// keyOf is the key a team key Secret names; zero when there is none.
func keyOf(s *corev1.Secret) keyRef {
	if s == nil {
		return keyRef{}
	}
	acct, _ := strconv.ParseInt(string(s.Data[keyAccountID]), 10, 64)
	key, _ := strconv.ParseInt(string(s.Data[keyKeyID]), 10, 64)
	return keyRef{account: acct, key: key}
}

// Held reports whether a team's key Secret is still there (through the
// cache): a Team keeps its finalizer until it is gone.
func (k *TeamKeys) Held(ctx context.Context, cfg Config, teamID int64) (bool, error) {
	s, err := k.secret(ctx, k.Kube, cfg, teamID)
	return s != nil, err
}

// Revoke deletes a team's service account (and so its keys) on the server
// and its key Secret, when the Team itself is deleted.
func (k *TeamKeys) Revoke(ctx context.Context, cfg Config, instance *terdut.Client, teamID int64) error {
	// NOTE: under the team's minting lock: a mint under way finishes (and
	// its key is revoked here) before the Team can go.
	defer k.lock(SecretName(cfg, teamID))()
	k.wrote(SecretName(cfg, teamID), "")
	sa, err := instance.GetServiceAccountByName(ctx, AccountName(teamID))
	if err != nil {
		return errors.Wrapf(err, errRevokeTeamKey, teamID)
	}
	var accounts []int64
	if sa != nil {
		accounts = append(accounts, sa.ID)
	}
	var secrets []*corev1.Secret
	for _, name := range []string{SecretName(cfg, teamID), legacySecretName(cfg, teamID)} {
		s, err := k.secretNamed(ctx, k.Kube, cfg, name)
		if err != nil {
			return err
		}
		if s != nil {
			secrets = append(secrets, s)
			accounts = append(accounts, recordedAccounts(s)...)
		}
	}
	// NOTE: the accounts the Secrets record too: a lookup by name that
	// misses the account (a list cut short, an index behind) is no proof
	// it is gone, and the Secret goes only once its accounts have.
	for _, id := range dedupe(accounts) {
		if err := instance.DeleteServiceAccount(ctx, id); err != nil && !terdut.IsNotFound(err) {
			return errors.Wrapf(err, errRevokeTeamKey, teamID)
		}
	}
	for _, s := range secrets {
		if err := k.Kube.Delete(ctx, s); err != nil && !kerrors.IsNotFound(err) {
			return errors.Wrapf(err, errWriteTeamKey, k.Namespace, s.Name)
		}
	}
	return nil
}

// recordedAccounts are the service accounts a team-key Secret names: the one
// its key is on, and the one a mint under way marked.
func recordedAccounts(s *corev1.Secret) []int64 {
	var out []int64
	for _, v := range []string{string(s.Data[keyAccountID]), s.Annotations[AnnotationMinting]} {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil && id > 0 {
			out = append(out, id)
		}
	}
	return out
}

// dedupe keeps the first of each ID.
func dedupe(ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
