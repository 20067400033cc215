package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// percentiles of the MRs' time to Ready, from times of the given
// resolution (a condition's lastTransitionTime: whole seconds, so start is
// taken to its second too).
func percentiles(ready []time.Time, start time.Time, resolution time.Duration) (p50, p95, maxS float64) {
	s := start.Truncate(resolution)
	d := make([]float64, 0, len(ready))
	for _, t := range ready {
		d = append(d, max(0, t.Sub(s).Seconds()))
	}
	slices.Sort(d)
	at := func(q float64) float64 { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return at(0.5), at(0.95), d[len(d)-1]
}

// procStats reads a process's peak RSS (MiB) and CPU seconds from /proc.
func procStats(pid int) (peakMiB, cpu float64) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err == nil {
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				peakMiB = kb / 1024
			}
		}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// The fields after the command's closing parenthesis; utime and
		// stime are the 14th and 15th of the whole line, in clock ticks
		// (100 a second on Linux).
		if i := bytes.LastIndexByte(stat, ')'); i > 0 {
			f := strings.Fields(string(stat[i+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				s, _ := strconv.ParseFloat(f[12], 64)
				cpu = (u + s) / 100
			}
		}
	}
	return peakMiB, cpu
}

// routes sorts a request count map for printing.
func routes(m map[string]int) []string {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if strings.Contains(k, " /api/") {
			out = append(out, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return out
}

// apiRequests reads the API server's requests so far (apiserver_request_total
// of POST, PUT, PATCH, APPLY, DELETE, GET and LIST: watches aside), by "VERB
// resource[/subresource]", with the code when it was refused ("PUT secrets
// (409)").
func apiRequests(metrics string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "GET", "LIST":
		default:
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		what := l["resource"]
		if l["subresource"] != "" {
			what += "/" + l["subresource"]
		}
		if c := l["code"]; c != "" && !strings.HasPrefix(c, "2") {
			what += " (" + c + ")" // refused: a conflict costs the API server too
		}
		out[l["verb"]+" "+what] += n
	}
	return out
}

// requestsSince is after less before, per MR, leaving out what rounds to 0;
// none if either could not be read.
func requestsSince(before, after map[string]float64, mrs int) map[string]float64 {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range after {
		if d := (v - before[k]) / float64(max(1, mrs)); d >= 0.005 {
			out[k] = d
		}
	}
	return out
}

// perMR prints requests per MR, most first, and the sums of writes and reads.
func perMR(m map[string]float64) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	writes, reads := 0.0, 0.0
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if strings.HasPrefix(k, "GET ") || strings.HasPrefix(k, "LIST ") {
			reads += m[k]
		} else {
			writes += m[k]
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]))
	}
	return fmt.Sprintf("%.2f writes and %.2f reads (%s)", writes, reads, strings.Join(parts, ", "))
}
