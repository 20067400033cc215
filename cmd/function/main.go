// Command function serves the composition function behind the TerdutServer
// and TerdutTeam claims (internal/function) over gRPC. Crossplane dials it
// with mTLS: --tls-server-certs-dir (or TLS_SERVER_CERTS_DIR, which
// Crossplane's function runtime sets) holds ca.crt, tls.crt and tls.key.
// --insecure serves plaintext, for `crossplane render` only.
package main

import (
	"flag"
	"fmt"
	"os"

	fn "github.com/crossplane/function-sdk-go"

	"git.ryuvia.com/niklas/provider-terdut/internal/function"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "function:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("function", flag.ContinueOnError)
	address := fs.String("address", ":9443", "Address to serve gRPC on.")
	certs := fs.String("tls-server-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "Directory with ca.crt, tls.crt and tls.key for mTLS.")
	insecure := fs.Bool("insecure", false, "Serve without TLS (for crossplane render only).")
	debug := fs.Bool("debug", false, "Log every composition at debug level.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *certs == "" && !*insecure {
		return fmt.Errorf("set --tls-server-certs-dir (Crossplane dials functions with mTLS), or --insecure for crossplane render")
	}
	log, err := fn.NewLogger(*debug)
	if err != nil {
		return err
	}
	log.Info("serving", "address", *address, "mtls", !*insecure)
	return fn.Serve(&function.Function{Log: log},
		fn.Listen("tcp", *address),
		fn.MTLSCertificates(*certs),
		fn.Insecure(*insecure))
}
