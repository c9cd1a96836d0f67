package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// cpuOf returns a process's user + system CPU time so far.
func cpuOf(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

// parseStat reads utime and stime (fields 14 and 15) of a stat line. The
// command name, field 2, is in parentheses and may hold spaces: fields are
// counted after its closing parenthesis.
func parseStat(line string) (time.Duration, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name in %q", line)
	}
	f := strings.Fields(line[i+1:]) // from field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the name", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat: utime %q, stime %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// memOf returns a process's resident set now and its peak (VmRSS, VmHWM),
// in bytes.
func memOf(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatus(string(b))
}

func parseStatus(text string) (rss, peak int64, err error) {
	found := 0
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(rest) // "1234", "kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("status: %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("status: %q: %w", line, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("status: VmRSS or VmHWM missing")
	}
	return rss, peak, nil
}
