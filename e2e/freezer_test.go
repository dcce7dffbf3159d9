//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A freezer stops a process without its consent, as an operator or a
// container runtime does: SIGSTOP, or a cgroup freezer (`docker pause`).
type freezer struct {
	name string
	// freeze stops process pid and returns what lets it run again (a
	// killed process then dies); a cgroup is also thawed and removed at
	// the test's cleanup.
	freeze func(t *testing.T, pid int) (thaw func())
}

// freezers lists SIGSTOP and every cgroup freezer the kernel offers (v1,
// v2). With no cgroup freezer at all the test fails, saying how to mount
// one.
func freezers(t *testing.T) []freezer {
	t.Helper()
	fs := []freezer{{name: "SIGSTOP", freeze: func(t *testing.T, pid int) func() {
		freeze(t, pid)
		return func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	}}}
	var missing []string
	for _, v2 := range []bool{false, true} {
		mount, err := cgroupMount(v2)
		if err != nil {
			missing = append(missing, err.Error())
			continue
		}
		fs = append(fs, freezer{name: (&cgroupFreezer{v2: v2}).kind(), freeze: func(t *testing.T, pid int) func() {
			cg := &cgroupFreezer{mount: mount, v2: v2}
			cg.freeze(t, pid)
			return func() { cg.thaw(t) }
		}})
	}
	if len(fs) == 1 {
		t.Fatalf("no cgroup freezer to test with (%s); as root, mount one with\n"+
			"  mkdir -p /sys/fs/cgroup/freezer && mount -t cgroup -o freezer freezer /sys/fs/cgroup/freezer   (cgroup v1)\n"+
			"or\n  mount -t cgroup2 none /sys/fs/cgroup   (cgroup v2)\n"+
			"and run the tests as root", strings.Join(missing, "; "))
	}
	for _, m := range missing {
		t.Logf("not tested here: %s", m)
	}
	return fs
}

// cgroupMount finds where the cgroup v1 freezer hierarchy (v2 false) or
// the cgroup v2 hierarchy is mounted, in /proc/self/mountinfo.
func cgroupMount(v2 bool) (string, error) {
	kind := "cgroup v1 freezer"
	if v2 {
		kind = "cgroup v2"
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("%s: %w", kind, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 {
			continue
		}
		switch {
		case v2 && tail[0] == "cgroup2":
			return fields[4], nil
		case !v2 && tail[0] == "cgroup" && hasOption(tail[2], "freezer"):
			return fields[4], nil
		}
	}
	return "", fmt.Errorf("%s: not mounted", kind)
}

func hasOption(opts, name string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// cgroupFreezer freezes a process by moving it into a cgroup of its own
// and freezing that.
type cgroupFreezer struct {
	mount string
	v2    bool
	dir   string // the cgroup, once made
}

func (c *cgroupFreezer) kind() string {
	if c.v2 {
		return "cgroup v2 freezer"
	}
	return "cgroup v1 freezer"
}

func (c *cgroupFreezer) write(t *testing.T, file, value string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(value), 0o644); err != nil {
		t.Fatalf("%s: write %q to %s: %v (the tests need root for cgroups)", c.kind(), value, filepath.Join(c.dir, file), err)
	}
}

func (c *cgroupFreezer) read(file string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, file))
	return string(b)
}

// frozen reports whether the cgroup is wholly frozen.
func (c *cgroupFreezer) frozen() bool {
	if c.v2 {
		return strings.Contains(c.read("cgroup.events"), "frozen 1")
	}
	return strings.TrimSpace(c.read("freezer.state")) == "FROZEN"
}

func (c *cgroupFreezer) freeze(t *testing.T, pid int) {
	t.Helper()
	c.dir = filepath.Join(c.mount, fmt.Sprintf("fsmcp-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		t.Fatalf("%s: %v (the tests need root for cgroups)", c.kind(), err)
	}
	t.Cleanup(func() { c.remove(t) })
	c.write(t, "cgroup.procs", strconv.Itoa(pid))
	if c.v2 {
		c.write(t, "cgroup.freeze", "1")
	} else {
		c.write(t, "freezer.state", "FROZEN")
	}
	eventually(t, 10*time.Second, c.kind()+" to freeze its cgroup", c.frozen)
}

func (c *cgroupFreezer) thaw(t *testing.T) {
	t.Helper()
	if c.v2 {
		c.write(t, "cgroup.freeze", "0")
	} else {
		c.write(t, "freezer.state", "THAWED")
	}
}

// remove thaws the cgroup, ends what is still in it (the processes the
// test froze) and removes it.
func (c *cgroupFreezer) remove(t *testing.T) {
	c.thaw(t)
	for _, f := range strings.Fields(c.read("cgroup.procs")) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	eventually(t, 10*time.Second, "the test's cgroup to empty", func() bool {
		return strings.TrimSpace(c.read("cgroup.procs")) == ""
	})
	if err := os.Remove(c.dir); err != nil {
		t.Errorf("remove %s: %v", c.dir, err)
	}
}
