package check

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"

	"sexton/deploy/check/internal/sextonbin"
)

const readmePath = "../README.md"

// fenced returns the first fenced block of language lang after marker.
func fenced(t *testing.T, text, marker, lang string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, marker)
	if !ok {
		t.Fatalf("%s has no %q", readmePath, marker)
	}
	_, body, ok := strings.Cut(after, "```"+lang+"\n")
	if !ok {
		t.Fatalf("%s: no ```%s block after %q", readmePath, lang, marker)
	}
	body, _, ok = strings.Cut(body, "```")
	if !ok {
		t.Fatalf("%s: the ```%s block after %q does not end", readmePath, lang, marker)
	}
	return body
}

// recordingStub is a tool that writes its name and arguments, NUL-separated,
// as one line of $WALK_LOG and does nothing else.
const recordingStub = "#!/bin/sh\n{ printf '%s\\0' \"$(basename \"$0\")\" \"$@\"; printf '\\n'; } >>\"$WALK_LOG\"\n"

// call is one recorded invocation.
type call struct {
	tool string
	args []string
}

// flagValues collects the values of flag names (-n, --namespace=...) in
// args and returns them with the remaining positional arguments.
func flagValues(args []string, names ...string) (vals map[string][]string, positional []string) {
	vals = map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		matched := false
		for _, n := range names {
			if a == n && i+1 < len(args) {
				vals[n] = append(vals[n], args[i+1])
				i++
				matched = true
			} else if v, ok := strings.CutPrefix(a, n+"="); ok {
				vals[n] = append(vals[n], v)
				matched = true
			}
		}
		if !matched {
			positional = append(positional, a)
		}
	}
	return vals, positional
}

// dates are what differ between two runs of the walkthrough's sexton lines.
var dates = regexp.MustCompile(`\d{4}-\d{2}-\d{2}`)

// TestWalkthrough runs deploy/README.md's way from nothing to a TLS cluster
// with the real sexton and kubectl, helm, make and docker recorded, then
// checks what a cluster would find: the Secrets the kubectl commands create
// hold every file and token the chart's pods read (rendered with the helm
// command's own release, namespace, values file and --set values); every
// pod's certificate chains to the CA, names sexton://ROLE/ID for the pod's
// node or client id and every host name the pod advertises or is scraped
// by; the pods run the image make image tagged and docker pushed; the
// chart lints with those values; and what sexton and helm's NOTES print is
// what the README shows.
func TestWalkthrough(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	script := fenced(t, string(readme), "<!-- walkthrough:", "sh")
	shown := fenced(t, string(readme), "<!-- walkthrough output -->", "text")

	work := t.TempDir()
	stubs := filepath.Join(work, "stubs")
	if err := os.Mkdir(stubs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sextonbin.Path(t), filepath.Join(stubs, "sexton")); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"kubectl", "helm", "make", "docker"} {
		if err := os.WriteFile(filepath.Join(stubs, tool), []byte(recordingStub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sextonbin.Root(t), "deploy"), filepath.Join(work, "deploy")); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(work, "calls")
	sh := exec.Command("bash", "-euo", "pipefail", "-c", script)
	sh.Dir = work
	sh.Env = append(os.Environ(), "PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"), "WALK_LOG="+logPath)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	normShown := dates.ReplaceAllString(shown, "DATE")
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if !strings.Contains(normShown, dates.ReplaceAllString(l, "DATE")+"\n") {
			t.Errorf("the walkthrough printed a line its output block does not show:\n%s", l)
		}
	}

	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var calls []call
	for l := range strings.SplitSeq(strings.TrimSuffix(string(logged), "\n"), "\n") {
		f := strings.Split(strings.TrimSuffix(l, "\x00"), "\x00")
		calls = append(calls, call{f[0], f[1:]})
	}

	namespaces := map[string]bool{}
	secrets := map[string]map[string][]byte{}
	var imageTag, imageVersion, pushed string
	var helmArgs []string
	for _, c := range calls {
		fl, pos := flagValues(c.args, "-n", "--namespace", "--from-file", "--from-literal", "-i", "-f", "--values", "--set")
		for _, ns := range append(fl["-n"], fl["--namespace"]...) {
			namespaces[ns] = true
		}
		switch {
		case c.tool == "kubectl" && slices.Equal(pos[:min(3, len(pos))], []string{"create", "secret", "generic"}):
			s := map[string][]byte{}
			for _, f := range fl["--from-file"] {
				b, err := os.ReadFile(filepath.Join(work, f))
				if err != nil {
					t.Fatalf("kubectl %q: %v", c.args, err)
				}
				s[filepath.Base(f)] = b
			}
			for _, l := range fl["--from-literal"] {
				k, v, _ := strings.Cut(l, "=")
				s[k] = []byte(v)
			}
			secrets[pos[3]] = s
		case c.tool == "make" && slices.Contains(pos, "image"):
			for _, a := range pos {
				if v, ok := strings.CutPrefix(a, "IMAGE_TAG="); ok {
					imageTag = v
				}
				if v, ok := strings.CutPrefix(a, "VERSION="); ok {
					imageVersion = v
				}
			}
		case c.tool == "docker" && len(pos) == 2 && pos[0] == "push":
			pushed = pos[1]
		case c.tool == "helm" && len(pos) > 0 && pos[0] == "install":
			helmArgs = c.args
		}
	}
	if len(namespaces) != 1 {
		t.Errorf("the commands name namespaces %v, want one", namespaces)
	}
	var ns string
	for n := range namespaces {
		ns = n
	}
	if imageTag == "" || pushed != imageTag {
		t.Errorf("make image tags %q, docker pushes %q: want the same image", imageTag, pushed)
	}
	if imageVersion == "" || !strings.HasSuffix(imageTag, ":"+imageVersion) {
		t.Errorf("make image builds version %q tagged %q: want the tag to name what sexton version says", imageVersion, imageTag)
	}
	if helmArgs == nil {
		t.Fatal("the walkthrough runs no helm install")
	}
	fl, pos := flagValues(helmArgs, "-n", "--namespace", "-f", "--values", "--set")
	if len(pos) != 3 {
		t.Fatalf("helm %q: want install RELEASE CHART", helmArgs)
	}
	vals := map[string]any{}
	for _, f := range append(fl["-f"], fl["--values"]...) {
		for k, v := range readValues(t, filepath.Join(work, f)) {
			vals[k] = v
		}
	}
	for _, s := range fl["--set"] {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatalf("helm --set %s: %v", s, err)
		}
	}
	chart := filepath.Join(work, pos[2])
	lint(t, chart, ns, vals)
	rel := renderRelease(t, chart, pos[1], ns, vals)
	if !strings.Contains(shown, "NOTES:\n"+strings.TrimSpace(rel.Info.Notes)+"\n") {
		t.Errorf("helm install's NOTES are not what the output block shows:\n%s", rel.Info.Notes)
	}
	o := decode(t, rel.Manifest)
	checkWorkloads(t, o, ns, true, 1)

	// With monitoring on as well: the ServiceMonitors' TLS server names.
	withMonitors := map[string]any{}
	for k, v := range vals {
		withMonitors[k] = v
	}
	if err := strvals.ParseInto("monitoring.serviceMonitor.enabled=true", withMonitors); err != nil {
		t.Fatal(err)
	}
	serverNames := map[string]string{} // service -> serverName
	for _, m := range decode(t, renderRelease(t, chart, pos[1], ns, withMonitors).Manifest).custom {
		if m["kind"] != "ServiceMonitor" {
			continue
		}
		spec, _ := m["spec"].(map[string]any)
		sel, _ := spec["selector"].(map[string]any)
		labels, _ := sel["matchLabels"].(map[string]any)
		eps, _ := spec["endpoints"].([]any)
		for _, e := range eps {
			tc, _ := e.(map[string]any)["tlsConfig"].(map[string]any)
			name, _ := tc["serverName"].(string)
			svc, _ := labels["sexton.io/service"].(string)
			serverNames[svc] = name
		}
	}

	if _, ok := secrets[""]; ok || len(secrets) == 0 {
		t.Fatalf("secrets created: %v", secrets)
	}
	for name, s := range secrets {
		if _, ok := s["ca.key"]; ok {
			t.Errorf("Secret %s holds the CA key", name)
		}
	}
	pods := map[string]int{}
	for _, ss := range o.statefulSets {
		if ss.Spec.Template.Spec.Containers[0].Image != imageTag {
			t.Errorf("%s runs image %q, want %q (make image's)", ss.Name, ss.Spec.Template.Spec.Containers[0].Image, imageTag)
		}
		component := ss.Spec.Template.Labels["app.kubernetes.io/component"]
		pods[component] += int(*ss.Spec.Replicas)
		for i := range int(*ss.Spec.Replicas) {
			checkPodCredentials(t, ss, ss.Name+"-"+strconv.Itoa(i), component, secrets, serverNames[ss.Spec.ServiceName])
		}
	}
	if pods["master"] != 3 || pods["holder"] != 2 {
		t.Errorf("pods %v, want 3 masters and 2 holders", pods)
	}
	tokens := map[string]bool{}
	for _, k := range []string{"cluster-token", "client-token", "holder-token", "operator-token"} {
		v := string(secrets["sexton-tokens"][k])
		if len(v) < 32 || tokens[v] {
			t.Errorf("sexton-tokens %s = %q: want its own generated token", k, v)
		}
		tokens[v] = true
	}
}

// checkPodCredentials checks that pod (of StatefulSet ss, running as
// component) finds every Secret key it reads, and that its certificate
// fits how it is dialed.
func checkPodCredentials(t *testing.T, ss appsv1.StatefulSet, pod, component string, secrets map[string]map[string][]byte, serverName string) {
	t.Helper()
	spec := ss.Spec.Template.Spec
	c := spec.Containers[0]
	subst := func(v string) string { return strings.ReplaceAll(v, "$(POD_NAME)", pod) }
	mounted := map[string]string{} // mount path -> Secret
	for _, vm := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				mounted[vm.MountPath] = v.Secret.SecretName
			}
		}
	}
	file := func(envName string) []byte {
		e, ok := env(c, envName)
		if !ok {
			t.Errorf("%s: no %s", pod, envName)
			return nil
		}
		p := subst(e.Value)
		s, ok := mounted[filepath.Dir(p)]
		if !ok {
			t.Errorf("%s: %s=%s is in no mounted Secret", pod, envName, p)
			return nil
		}
		b, ok := secrets[s][filepath.Base(p)]
		if !ok {
			t.Errorf("%s: %s=%s: Secret %s has no key %s", pod, envName, p, s, filepath.Base(p))
		}
		return b
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			if len(secrets[ref.Name][ref.Key]) == 0 {
				t.Errorf("%s: %s reads key %s of Secret %s, which the walkthrough does not create", pod, e.Name, ref.Key, ref.Name)
			}
		}
	}
	caPEM, certPEM, keyPEM := file("SEXTON_TLS_CA"), file("SEXTON_TLS_CERT"), file("SEXTON_TLS_KEY")
	if caPEM == nil || certPEM == nil || keyPEM == nil {
		return
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("%s: certificate and key: %v", pod, err)
	}
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		t.Fatalf("%s: the certificate is not PEM", pod)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s: ca.crt holds no certificate", pod)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s: the certificate does not chain to ca.crt: %v", pod, err)
	}
	idVar := map[string]string{"master": "SEXTON_NODE_ID", "holder": "SEXTON_HOLDER_CLIENT_ID"}[component]
	id, _ := env(c, idVar)
	wantURI := "sexton://" + component + "/" + subst(id.Value)
	if len(cert.URIs) != 1 || cert.URIs[0].String() != wantURI {
		t.Errorf("%s: certificate URIs %v, want %s (its %s)", pod, cert.URIs, wantURI, idVar)
	}
	hosts := []string{serverName}
	for _, name := range []string{"SEXTON_RAFT_ADDR", "SEXTON_RPC_ADVERTISE", "SEXTON_HOLDER_ADVERTISE"} {
		if e, ok := env(c, name); ok {
			host, _, _ := strings.Cut(subst(e.Value), ":")
			hosts = append(hosts, host)
		}
	}
	if serverName == "" || len(hosts) < 2 {
		t.Errorf("%s: hosts to check %q: want a ServiceMonitor server name and an advertised address", pod, hosts)
	}
	for _, h := range hosts {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("%s: dialed as %s: %v", pod, h, err)
		}
	}
}
