package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

// secureClusterBlock is the fenced sh block between the secure-cluster
// markers of docs/SECURITY.md, its continuation lines joined and its
// comments and blank lines dropped: one command per entry.
func secureClusterBlock(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := strings.Index(doc, "<!-- secure-cluster:begin -->"), strings.Index(doc, "<!-- secure-cluster:end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/SECURITY.md lacks the secure-cluster markers")
	}
	block := doc[begin:end]
	open := strings.Index(block, "```sh\n")
	closing := strings.LastIndex(block, "```")
	if open < 0 || closing <= open {
		t.Fatal("the secure-cluster block is not a fenced sh block")
	}
	var cmds []string
	cur := ""
	for _, line := range strings.Split(block[open+len("```sh\n"):closing], "\n") {
		line = strings.TrimSpace(line)
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\")
			continue
		}
		cmds = append(cmds, strings.Join(strings.Fields(cur+line), " "))
		cur = ""
	}
	return cmds
}

// The section "A secure cluster from nothing" of docs/SECURITY.md works
// as written: its commands run on loopback (each host:port of the
// example becomes a free loopback port, each --ip 127.0.0.1, the data
// directories temporary ones), with `sexton` the built binary. The CA
// and the certificates are made, three masters and two holders start
// with mutual TLS, the application's put and get and the operator's
// snapshot save and peer list succeed; and the application's certificate
// is refused the operator's snapshot save.
func TestSecureClusterFromNothingDoc(t *testing.T) {
	cmds := secureClusterBlock(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(bin, "sexton")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))

	ports := map[string]string{}
	hostPort := regexp.MustCompile(`10\.0\.0\.\d+:\d+`)
	local := func(cmd string) string {
		cmd = hostPort.ReplaceAllStringFunc(cmd, func(hp string) string {
			if _, ok := ports[hp]; !ok {
				ports[hp] = freePort(t)
			}
			return ports[hp]
		})
		cmd = regexp.MustCompile(`--ip 10\.0\.0\.\d+`).ReplaceAllString(cmd, "--ip 127.0.0.1")
		return strings.ReplaceAll(cmd, "/var/lib/sexton/", filepath.Join(dir, "data")+"/")
	}
	run := func(script []string) string {
		t.Helper()
		sh := exec.Command("sh", "-ec", strings.Join(script, "\n"))
		sh.Dir, sh.Env = dir, env
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("the documented commands failed: %v\n%s\n---\n%s", err, strings.Join(script, "\n"), out)
		}
		return string(out)
	}

	var setup, servers, callers []string
	for _, c := range cmds {
		c = local(c)
		switch {
		case strings.HasPrefix(c, "sexton master ") || strings.HasPrefix(c, "sexton holder "):
			servers = append(servers, c)
		case len(servers) == 0:
			setup = append(setup, c)
		default:
			callers = append(callers, c)
		}
	}
	if len(servers) != 5 || len(setup) < 8 || len(callers) < 4 {
		t.Fatalf("the block has %d setup commands, %d servers and %d caller commands; want the CA and 7 certificates, 3 masters and 2 holders, and the callers", len(setup), len(servers), len(callers))
	}
	run(setup)

	for i, c := range servers {
		logPath := filepath.Join(dir, strings.Fields(c)[1]+"-"+string(rune('0'+i))+".log")
		f, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", "exec "+c)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			f.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logPath)
				t.Logf("---- %s ----\n%s", c, tail(string(b), 3000))
			}
		})
	}

	// Both holders mounted, seen by the operator.
	pki := filepath.Join(dir, "pki")
	operator := tlsconf.Files{Cert: filepath.Join(pki, "operator-alice.crt"), Key: filepath.Join(pki, "operator-alice.key"), CA: filepath.Join(pki, "ca.crt")}
	var masters []string
	for hp, p := range ports {
		if strings.HasSuffix(hp, ":7101") {
			masters = append(masters, p)
		}
	}
	cl := transport.NewClusterClient(masters, transport.ClusterConfig{ClientConfig: transport.ClientConfig{TLS: clientTLS(t, operator)}, MaxWait: 5 * time.Second})
	defer cl.Close()
	testutil.WaitFor(t, 60*time.Second, func() bool {
		ctx, cancel := ctxT(5 * time.Second)
		defer cancel()
		var segs api.ListSegmentsResponse
		return cl.Call(ctx, api.MethodListSegments, &api.Empty{}, &segs) == nil && len(segs.Segments) == 2
	}, "two holders mounted")

	out := run(callers)
	if !strings.Contains(out, "hello") {
		t.Fatalf("the application's get does not print the value:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "backup.snap")); err != nil || fi.Size() == 0 {
		t.Fatalf("the operator's snapshot: %v", err)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		if !strings.Contains(out, id) {
			t.Fatalf("raft list-peers does not list %s:\n%s", id, out)
		}
	}
	refused := exec.Command("sh", "-c", "export SEXTON_MASTERS="+strings.Join(masters, ",")+" SEXTON_TLS_CA=pki/ca.crt; "+
		"exec sexton operator snapshot save stolen.snap --tls-cert pki/client-app.crt --tls-key pki/client-app.key")
	refused.Dir, refused.Env = dir, env
	if b, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(b), "PERMISSION_DENIED") {
		t.Fatalf("the application's certificate saved a snapshot: %v\n%s", err, b)
	}
}
