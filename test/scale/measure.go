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

// percentiles of the MRs' time to Ready (1 s resolution).
func percentiles(ready []time.Time, start time.Time) (p50, p95, maxS float64) {
	s := start.Truncate(time.Second)
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
