package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func TestScanFindsAKeyAmongWords(t *testing.T) {
	dir := t.TempDir()
	key := "tdk_0123456789abcdef0123456789abcdef"
	h := sha256.Sum256([]byte(key))
	hashes := filepath.Join(dir, "hashes")
	if err := os.WriteFile(hashes, []byte(hex.EncodeToString(h[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clean := filepath.Join(dir, "clean.log")
	dirty := filepath.Join(dir, "dirty.log")
	_ = os.WriteFile(clean, []byte("--- PASS: TestTeam\nkey [redacted] ok\n"), 0o600)
	_ = os.WriteFile(dirty, []byte("line one\nAuthorization: Bearer "+key+"\n"), 0o600)
	if err := run([]string{"-hashes", hashes, clean}); err != nil {
		t.Errorf("a clean log: %v", err)
	}
	if err := run([]string{"-hashes", hashes, clean, dirty}); err == nil {
		t.Error("a log with the key passed")
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o600)
	if err := run([]string{"-hashes", empty, clean}); err == nil {
		t.Error("no hashes at all passed: nothing would be checked")
	}
}
