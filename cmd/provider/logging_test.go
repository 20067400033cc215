package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
)

// lines records what reaches the base logger.
type lines struct{ got *[]string }

func (l lines) Info(msg string, kv ...any) {
	*l.got = append(*l.got, "info "+msg+fmt.Sprintf("%v", kv))
}

func (l lines) Debug(msg string, kv ...any) {
	*l.got = append(*l.got, "debug "+msg+fmt.Sprintf("%v", kv))
}

func (l lines) WithValues(...any) logging.Logger {
	panic("the base logger's WithValues is never called")
}

// Values given to WithValues arrive with each message, in order, and two
// loggers made from one do not share them; Debug is dropped unless on.
func TestLazyLoggerKeepsValues(t *testing.T) {
	var got []string
	l := lazyLogger{base: lines{&got}}.WithValues("controller", "team")
	a, b := l.WithValues("name", "a"), l.WithValues("name", "b")
	a.Info("created", "id", 7)
	b.Info("created")
	a.Debug("observed")
	lazyLogger{base: lines{&got}, debug: true}.WithValues("k", "v").Debug("observed")
	want := "info created[controller team name a id 7]|info created[controller team name b]|debug observed[k v]"
	if s := strings.Join(got, "|"); s != want {
		t.Errorf("logged %q, want %q", s, want)
	}
}
