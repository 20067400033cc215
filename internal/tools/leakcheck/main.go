// Command leakcheck fails when a log holds a key: it reads SHA-256 hashes
// of every secret a test run's doubles issued (one hex hash a line, written
// by the end-to-end suite) and looks for those secrets in the files named,
// such as the suite's own output. It never sees, and never prints, a key:
// it hashes every word of the logs and compares hashes.
//
//	leakcheck -hashes FILE LOG...
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "leakcheck:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("leakcheck", flag.ContinueOnError)
	hashes := fs.String("hashes", "", "File of SHA-256 hex hashes of the secrets to look for, one a line.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	want, err := readHashes(*hashes)
	if err != nil {
		return err
	}
	if len(want) == 0 {
		return fmt.Errorf("%s holds no hashes: the run wrote none, so nothing would be checked", *hashes)
	}
	leaks := 0
	var bytes int64
	for _, name := range fs.Args() {
		n, found, err := scan(name, want)
		if err != nil {
			return err
		}
		bytes += n
		for _, f := range found {
			fmt.Fprintf(os.Stderr, "leakcheck: %s line %d holds an issued secret\n", name, f)
		}
		leaks += len(found)
	}
	fmt.Printf("leakcheck: %d issued secrets looked for in %d bytes of %d files: %d found\n", len(want), bytes, len(fs.Args()), leaks)
	if leaks > 0 {
		return errors.New("a secret leaked into the output")
	}
	return nil
}

func readHashes(name string) (map[[sha256.Size]byte]bool, error) {
	f, err := os.Open(name) //nolint:gosec // G304: the tool reads the file it is told to.
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[[sha256.Size]byte]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		b, err := hex.DecodeString(strings.TrimSpace(sc.Text()))
		if err != nil || len(b) != sha256.Size {
			continue
		}
		out[[sha256.Size]byte(b)] = true
	}
	return out, sc.Err()
}

// scan returns the file's size and the lines holding a word whose hash is
// wanted. A word is a run of letters, digits and '_' (keys are such words).
func scan(name string, want map[[sha256.Size]byte]bool) (int64, []int, error) {
	f, err := os.Open(name) //nolint:gosec // G304: the tool reads the files it is told to.
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = f.Close() }()
	var size int64
	var found []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		size += int64(len(text)) + 1
		for _, w := range strings.FieldsFunc(text, notInWord) {
			if want[sha256.Sum256([]byte(w))] {
				found = append(found, line)
				break
			}
		}
	}
	return size, found, sc.Err()
}

// notInWord reports whether r ends a word: anything but a letter, a digit
// or '_'.
func notInWord(r rune) bool {
	return r != '_' && (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z')
}
