package check

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"helm.sh/helm/v4/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir     = "../helm/sexton"
	renderedPath = "../kubernetes/sexton.yaml"
	alertsPath   = "../monitoring/alerts.yml"
	// The values file deploy/README.md installs with.
	walkthroughValues = "../helm/values-tls.yaml"
)

// render renders the chart as `helm install --dry-run=client sexton
// deploy/helm/sexton -f valuesFile` does, without a cluster.
func render(t *testing.T, valuesFile string) string {
	t.Helper()
	return renderRelease(t, chartDir, "sexton", "default", readValues(t, valuesFile)).Manifest
}

// readValues reads a values file; "" gives the chart's defaults.
func readValues(t *testing.T, valuesFile string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if valuesFile == "" {
		return vals
	}
	b, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatalf("%s: %v", valuesFile, err)
	}
	return vals
}

// renderRelease renders the chart in dir as `helm install --dry-run=client
// name dir -n namespace` with vals does: its manifest and its NOTES.
func renderRelease(t *testing.T, dir, name, namespace string, vals map[string]any) *release.Release {
	t.Helper()
	rel, err := tryRender(dir, name, namespace, vals)
	if err != nil {
		t.Fatalf("render with %v: %v", vals, err)
	}
	return rel
}

// tryRender is renderRelease returning the chart's refusal.
func tryRender(dir, name, namespace string, vals map[string]any) (*release.Release, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load the chart: %w", err)
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: common.DefaultCapabilities,
	}
	in := action.NewInstall(cfg)
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName = name
	in.Namespace = namespace
	r, err := in.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("release of type %T", r)
	}
	return rel, nil
}

// lint lints the chart in dir with vals as `helm lint --strict` does:
// any warning or error fails the test.
func lint(t *testing.T, dir, namespace string, vals map[string]any) {
	t.Helper()
	l := action.NewLint()
	l.Strict = true
	l.Namespace = namespace
	res := l.Run([]string{dir}, vals)
	for _, m := range res.Messages {
		if m.Severity > 1 { // above INFO: warnings and errors
			t.Errorf("lint with %v: %s", vals, m)
		}
	}
	for _, err := range res.Errors {
		t.Errorf("lint with %v: %v", vals, err)
	}
}

// objects is a render's objects, each strict-decoded into its Kubernetes
// type: a field the type lacks fails the test.
type objects struct {
	services     []corev1.Service
	statefulSets []appsv1.StatefulSet
	pdbs         []policyv1.PodDisruptionBudget
	custom       []map[string]any // ServiceMonitor, PrometheusRule
}

func decode(t *testing.T, manifest string) objects {
	t.Helper()
	var o objects
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		strict := func(into any) {
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Errorf("%s does not decode strictly as %T: %v\n%s", meta.Kind, into, err, doc)
			}
		}
		switch key := meta.APIVersion + "/" + meta.Kind; key {
		case "v1/Service":
			var s corev1.Service
			strict(&s)
			o.services = append(o.services, s)
		case "apps/v1/StatefulSet":
			var s appsv1.StatefulSet
			strict(&s)
			o.statefulSets = append(o.statefulSets, s)
		case "policy/v1/PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			strict(&p)
			o.pdbs = append(o.pdbs, p)
		case "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule":
			m := map[string]any{}
			strict(&m)
			o.custom = append(o.custom, m)
		default:
			t.Errorf("rendered an object of unchecked kind %s", key)
		}
	}
	return o
}

func stripComments(doc string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// checkWorkloads holds for every render: the API server's rules
// (checkAPIRules); each container has resources,
// a locked-down securityContext and probes of the scheme TLS asks for;
// the masters advertise their stable names and have a PDB and hard
// anti-affinity.
func checkWorkloads(t *testing.T, o objects, namespace string, tls bool, wantHolderSets int) {
	t.Helper()
	checkAPIRules(t, o)
	scheme := corev1.URISchemeHTTP
	if tls {
		scheme = corev1.URISchemeHTTPS
	}
	var master *appsv1.StatefulSet
	holders := 0
	for i := range o.statefulSets {
		s := &o.statefulSets[i]
		switch s.Spec.Template.Labels["app.kubernetes.io/component"] {
		case "master":
			master = s
		case "holder":
			holders++
		}
		ps := s.Spec.Template.Spec.SecurityContext
		if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
			t.Errorf("%s: pod securityContext lacks runAsNonRoot", s.Name)
		}
		for _, c := range s.Spec.Template.Spec.Containers {
			where := s.Name + "/" + c.Name
			if len(c.Resources.Requests) == 0 || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: resources %v, want requests and a memory limit", where, c.Resources)
			}
			sc := c.SecurityContext
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s: securityContext %+v, want runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL", where, sc)
			}
			for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
				if p == nil || p.HTTPGet == nil {
					t.Errorf("%s: no %s probe", where, name)
					continue
				}
				if p.HTTPGet.Scheme != scheme {
					t.Errorf("%s: %s probe scheme %q, want %q", where, name, p.HTTPGet.Scheme, scheme)
				}
			}
			_, hasCA := env(c, "SEXTON_TLS_CA")
			if hasCA != tls {
				t.Errorf("%s: SEXTON_TLS_CA set %v, want %v", where, hasCA, tls)
			}
		}
	}
	if holders != wantHolderSets {
		t.Errorf("%d holder StatefulSets, want %d", holders, wantHolderSets)
	}
	if master == nil {
		t.Fatal("no master StatefulSet")
	}
	if r := master.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("master replicas %v, want 3", r)
	}
	c := master.Spec.Template.Spec.Containers[0]
	adv, ok := env(c, "SEXTON_RPC_ADVERTISE")
	if want := "$(POD_NAME).sexton-master." + namespace + ".svc.cluster.local:7101"; !ok || adv.Value != want {
		t.Errorf("master SEXTON_RPC_ADVERTISE %q, want %q", adv.Value, want)
	}
	if peers, _ := env(c, "SEXTON_PEERS"); strings.Count(peers.Value, "=") != 3 {
		t.Errorf("master SEXTON_PEERS %q, want three", peers.Value)
	}
	a := master.Spec.Template.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Errorf("master has no required pod anti-affinity")
	}
	if len(o.pdbs) != 1 || o.pdbs[0].Spec.MaxUnavailable == nil || o.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudgets %+v, want one with maxUnavailable 1", o.pdbs)
	}
}

func TestChartDefault(t *testing.T) {
	o := decode(t, render(t, ""))
	checkWorkloads(t, o, "default", false, 1)
	if len(o.custom) != 0 {
		t.Errorf("default render has %d monitoring objects, want none", len(o.custom))
	}
}

func TestChartTLSRoles(t *testing.T) {
	o := decode(t, render(t, "testdata/tls-roles.yaml"))
	checkWorkloads(t, o, "default", true, 2)
	for _, s := range o.statefulSets {
		c := s.Spec.Template.Spec.Containers[0]
		for _, name := range []string{"SEXTON_CLUSTER_TOKEN", "SEXTON_CLIENT_TOKEN", "SEXTON_OPERATOR_TOKEN"} {
			e, ok := env(c, name)
			if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "sexton-tokens" {
				t.Errorf("%s: %s not from the sexton-tokens Secret", s.Name, name)
			}
		}
		if e, _ := env(c, "SEXTON_TLS_CLIENT_AUTH"); e.Value != "require" {
			t.Errorf("%s: SEXTON_TLS_CLIENT_AUTH %q, want require", s.Name, e.Value)
		}
	}
	var rules map[string]any
	monitors := 0
	for _, m := range o.custom {
		switch m["kind"] {
		case "PrometheusRule":
			rules = m
		case "ServiceMonitor":
			monitors++
		}
	}
	if monitors != 3 {
		t.Errorf("%d ServiceMonitors, want 3 (masters and two pools)", monitors)
	}
	b, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	var alerts map[string]any
	if err := yaml.Unmarshal(b, &alerts); err != nil {
		t.Fatal(err)
	}
	if rules == nil || !reflect.DeepEqual(rules["spec"], alerts) {
		t.Errorf("the PrometheusRule's spec is not %s", alertsPath)
	}
}

// TestChartAlertsCopy: the chart carries deploy/monitoring/alerts.yml
// (promtool-tested there) byte for byte, since a chart reads only its own
// files.
func TestChartAlertsCopy(t *testing.T) {
	want, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(chartDir + "/files/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s/files/alerts.yml differs from %s: cp %s %s/files/alerts.yml", chartDir, alertsPath, alertsPath, chartDir)
	}
}

// TestChartRefusesBadValues: values.schema.json turns a value the chart
// would render into a broken or silently different cluster into an
// install-time error naming it.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"tls.clientAuth=yes", "/tls/clientAuth"},
		{"tls.enable=true", "enable"}, // a misspelt key is not ignored
		{"master.replicas=2", "/master/replicas"},
		{"master.ports.rpc=70000", "/master/ports/rpc"},
		{"holders.pools[0].name=Edge_1", "/holders/pools/0/name"},
		{"holders.pools[0].storage.size=lots", "/holders/pools/0/storage"},
		{"master.logLevel=verbose", "/master/logLevel"},
		{"image.repository=", "/image/repository"},
	} {
		vals := readValues(t, "")
		if err := strvals.ParseInto(tc.set, vals); err != nil {
			t.Fatal(err)
		}
		_, err := tryRender(chartDir, "sexton", "default", vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want a refusal naming %s", tc.set, err, tc.want)
		}
	}
}

func TestChartLint(t *testing.T) {
	for _, vf := range []string{"", "testdata/tls-roles.yaml", walkthroughValues} {
		lint(t, chartDir, "default", readValues(t, vf))
	}
}

const renderedHeader = "# Rendered from deploy/helm/sexton with its default values (make deploy-render);\n# do not edit: change the chart. kubectl apply -f this file, after creating the\n# sexton-tokens Secret (deploy/README.md).\n"

// TestRenderedManifestsInSync: deploy/kubernetes/sexton.yaml is the
// chart's default render. SEXTON_DEPLOY_RENDER=1 rewrites it.
func TestRenderedManifestsInSync(t *testing.T) {
	want := renderedHeader + render(t, "")
	if os.Getenv("SEXTON_DEPLOY_RENDER") == "1" {
		if err := os.WriteFile(renderedPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(renderedPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is not the chart's default render: run make deploy-render", renderedPath)
	}
}
