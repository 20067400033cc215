// Package terdutdouble is a TEST DOUBLE of terdut-server: an in-memory
// implementation of the REST contract in ../shared/terdut-api.md, for unit
// tests, the contract tests, the end-to-end suite and the local demo. It is
// not terdut-server and never stores anything on disk.
//
// What it implements faithfully:
//
//   - 401 without a Bearer key (or with an unknown or revoked one), except
//     for GET /healthz and POST /api/bootstrap;
//   - 403 for a team-scoped key outside its own team's escalation policy,
//     switches, integrations and OIDC groups (GET /api/users is allowed);
//   - POST /api/bootstrap once: 403 as soon as any user exists;
//   - 409 on a duplicate team or service-account name;
//   - no unique dead man's switch names, and a switch's name derived from
//     its matcher's canonical form when it is created without one;
//   - an integration's url and key returned only by the POST that made it;
//   - the escalation policy as one whole object (GET/PUT), "deleted" by a
//     PUT of an empty policy;
//   - users, service accounts, key minting and revocation.
//
// For tests it adds request counters (per route and per path as sent),
// fault injection (a status code, latency, "commit then fail", and 404 for a
// while after create), quirks a real server may have behind a 200 (lists
// reordered or cut short, objects read as before their last update, a team
// delete that keeps the team's service accounts) and an admin API under
// /admin/ (no auth: the double binds to loopback only) to read the counters
// and to change state behind a provider's back.
package terdutdouble
