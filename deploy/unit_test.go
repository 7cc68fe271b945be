// Package deploy holds what installs bothy on a server (bothy.service, the systemd unit) and
// the tests that hold it to the binary it starts.
package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/appliance"
	"bothy.dev/bothy/appliance/config"
)

// unit reads bothy.service as systemd does for the settings below: "Key=value" lines under a
// [Section], # and ; comments; a key given twice keeps every value in order.
func unit(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("bothy.service")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "", strings.HasPrefix(line, "#"), strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("bothy.service:%d: not a Key=value line of a section", n)
			}
			out[section+"."+strings.TrimSpace(k)] = append(out[section+"."+strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return out
}

// TestUnitSettings holds the unit to what an operator is promised: its own user and state
// directory, the hardening, enough file descriptors for the gateway, and a stop that lets serve's
// graceful shutdown finish before systemd kills it.
func TestUnitSettings(t *testing.T) {
	u := unit(t)
	want := map[string]string{
		"Service.Type":                    "exec", // serve does not speak sd_notify
		"Service.User":                    "bothy",
		"Service.StateDirectory":          "bothy",
		"Service.StateDirectoryMode":      "0700",
		"Service.ExecStart":               "/usr/local/bin/bothy serve --data-dir /var/lib/bothy",
		"Service.NoNewPrivileges":         "yes",
		"Service.ProtectSystem":           "strict",
		"Service.ProtectHome":             "yes",
		"Service.PrivateTmp":              "yes",
		"Service.PrivateDevices":          "yes",
		"Service.CapabilityBoundingSet":   "",
		"Service.LimitNOFILE":             "65536",
		"Service.Restart":                 "on-failure",
		"Service.RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX AF_NETLINK",
		"Install.WantedBy":                "multi-user.target",
	}
	for k, v := range want {
		if got := u[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if f := u["Service.SystemCallFilter"]; len(f) == 0 || f[0] != "@system-service" {
		t.Errorf("SystemCallFilter = %q, want @system-service first", f)
	}

	cfg, err := config.Load(config.Input{})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := time.ParseDuration(strings.Join(u["Service.TimeoutStopSec"], ""))
	if err != nil {
		t.Fatalf("TimeoutStopSec %q: %v", u["Service.TimeoutStopSec"], err)
	}
	if stop <= cfg.Shutdown.TotalTimeout {
		t.Errorf("TimeoutStopSec %v is not longer than shutdown.total_timeout's default %v: systemd would kill a graceful shutdown", stop, cfg.Shutdown.TotalTimeout)
	}
}

// TestUnitExecStartFlags runs the unit's command line through the real command-line parser (with
// --help, so that nothing starts): a renamed flag fails it.
func TestUnitExecStartFlags(t *testing.T) {
	args := strings.Fields(unit(t)["Service.ExecStart"][0])[1:]
	var stdout, stderr bytes.Buffer
	if code := appliance.Main(append(args, "--help"), &stdout, &stderr); code != 0 {
		t.Fatalf("bothy %s --help: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
}

// TestUnitVerifies has systemd itself check the unit: systemd-analyze verify, with ExecStart
// pointed at an executable that exists here. verify exits 0 on an unknown key or a bad value and
// only warns, so any output at all fails the test. CI installs systemd where it is missing.
func TestUnitVerifies(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is missing: install Debian's systemd")
		}
		t.Skip("systemd-analyze is missing")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("bothy.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "ExecStart=/usr/local/bin/bothy ", "ExecStart="+self+" ")
	if text == string(b) {
		t.Fatal("bothy.service has no ExecStart=/usr/local/bin/bothy")
	}
	path := filepath.Join(t.TempDir(), "bothy.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, "verify", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err != nil || out.Len() > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out.String())
	}
}
