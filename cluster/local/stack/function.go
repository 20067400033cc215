package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// FunctionName is the name Crossplane gives the Function of the
// Configuration's dependency xpkg.example.com/ryuvia/function-terdut; the
// Compositions refer to it.
const FunctionName = "ryuvia-function-terdut"

// StartFunction runs cmd/function as Crossplane core's composition function
// and installs the Configuration's XRDs and Compositions. Core dials
// functions only with mTLS, at the endpoint of an Active FunctionRevision:
// the function gets a server certificate from core's own CA, and the
// FunctionRevision is made by hand, paused (nothing pulls an image), with
// the endpoint in its status.
func (s *Stack) StartFunction(ctx context.Context) error {
	// NOTE: a stack that installed the provider's packages runs the
	// function from its package (Install extracted it); others build it.
	if _, err := os.Stat(s.Bin("function")); err != nil {
		if err := s.Build(ctx, "function", "./cmd/function", ""); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.Run, "function-tls")
	s.Stepf("composition function: server certificate for 127.0.0.1 from crossplane-root-ca")
	if err := s.ServingCerts(ctx, dir); err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(portFunction+s.PortOffset)
	if _, err := s.Start(ctx, "function", s.Bin("function"), "--address", addr, "--tls-server-certs-dir", dir); err != nil {
		return err
	}
	if err := s.poll(ctx, "the composition function", 20*time.Second, func() (bool, error) {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil, nil
	}); err != nil {
		return err
	}
	s.Stepf("FunctionRevision %s -> %s", FunctionName, addr)
	rev := fmt.Sprintf(`apiVersion: pkg.crossplane.io/v1
kind: FunctionRevision
metadata:
  name: %[1]s-local
  labels:
    pkg.crossplane.io/package: %[1]s
  annotations:
    crossplane.io/paused: "true"
spec:
  desiredState: Active
  image: xpkg.example.com/ryuvia/function-terdut:v0.1.0
  revision: 1
  ignoreCrossplaneConstraints: true
  skipDependencyResolution: true
`, FunctionName)
	if _, err := s.Kubectl(ctx, []byte(rev), "apply", "-f", "-"); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, nil, "patch", "functionrevision", FunctionName+"-local", "--subresource=status", "--type=merge",
		"-p", `{"status":{"endpoint":"`+addr+`","capabilities":["composition"]}}`); err != nil {
		return err
	}
	s.Stepf("Configuration: XRDs and Compositions from package/configuration/apis")
	if _, err := s.Kubectl(ctx, nil, "apply", "-f", filepath.Join(s.Root, "package/configuration/apis")); err != nil {
		return err
	}
	for _, cond := range []string{"established", "offered"} {
		if _, err := s.Kubectl(ctx, nil, "wait", "--for", "condition="+cond, "--timeout=120s", "compositeresourcedefinition", "--all"); err != nil {
			return err
		}
	}
	return nil
}
