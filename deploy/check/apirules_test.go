package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// checkAPIRules applies the API server's checks that a strict decode does
// not: names, label keys and values, port and environment variable names
// in their formats; every selector matching what it must select; every
// probe port, volume mount, headless service and ServiceMonitor port
// naming something rendered. Each problem is one test error.
func checkAPIRules(t *testing.T, o objects) {
	t.Helper()
	bad := func(what string, errs []string) {
		if len(errs) > 0 {
			t.Errorf("%s: %s", what, strings.Join(errs, "; "))
		}
	}
	checkLabels := func(what string, l map[string]string) {
		for k, v := range l {
			bad(fmt.Sprintf("%s label key %q", what, k), validation.IsQualifiedName(k))
			bad(fmt.Sprintf("%s label %s value %q", what, k, v), validation.IsValidLabelValue(v))
		}
	}
	services := map[string]corev1.Service{}
	for _, s := range o.services {
		services[s.Name] = s
		bad("Service name "+s.Name, validation.IsDNS1035Label(s.Name))
		checkLabels("Service "+s.Name, s.Labels)
		for _, p := range s.Spec.Ports {
			bad(fmt.Sprintf("Service %s port %q", s.Name, p.Name), validation.IsValidPortName(p.Name))
			bad(fmt.Sprintf("Service %s port %s number", s.Name, p.Name), validation.IsValidPortNum(int(p.Port)))
		}
	}
	for _, s := range o.statefulSets {
		what := "StatefulSet " + s.Name
		bad(what+" name", validation.IsDNS1123Subdomain(s.Name))
		// Its pods' names are host names in the headless service's domain.
		bad(what+" last pod name", validation.IsDNS1123Label(fmt.Sprintf("%s-%d", s.Name, *s.Spec.Replicas-1)))
		checkLabels(what, s.Labels)
		checkLabels(what+" pod template", s.Spec.Template.Labels)
		if sel := labels.SelectorFromSet(s.Spec.Selector.MatchLabels); len(s.Spec.Selector.MatchLabels) == 0 || !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("%s: selector %v does not select its pod template's labels %v", what, s.Spec.Selector.MatchLabels, s.Spec.Template.Labels)
		}
		if svc, ok := services[s.Spec.ServiceName]; !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone ||
			!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("%s: serviceName %q is no rendered headless Service selecting its pods", what, s.Spec.ServiceName)
		}
		volumes := map[string]bool{}
		for _, v := range s.Spec.Template.Spec.Volumes {
			volumes[v.Name] = true
		}
		for _, v := range s.Spec.VolumeClaimTemplates {
			volumes[v.Name] = true
		}
		for _, c := range s.Spec.Template.Spec.Containers {
			cw := what + " container " + c.Name
			bad(cw+" name", validation.IsDNS1123Label(c.Name))
			var ports []string
			for _, p := range c.Ports {
				bad(fmt.Sprintf("%s port %q", cw, p.Name), validation.IsValidPortName(p.Name))
				bad(fmt.Sprintf("%s port %s number", cw, p.Name), validation.IsValidPortNum(int(p.ContainerPort)))
				ports = append(ports, p.Name)
			}
			for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
				if p != nil && p.HTTPGet != nil && !slices.Contains(ports, p.HTTPGet.Port.String()) {
					t.Errorf("%s: a probe's port %q is not one of its ports %v", cw, p.HTTPGet.Port.String(), ports)
				}
			}
			for _, e := range c.Env {
				bad(fmt.Sprintf("%s env %q", cw, e.Name), validation.IsEnvVarName(e.Name))
			}
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					t.Errorf("%s: mounts volume %q, which is neither a volume nor a claim template", cw, m.Name)
				}
			}
		}
	}
	for _, p := range o.pdbs {
		selected := 0
		for _, s := range o.statefulSets {
			if labels.SelectorFromSet(p.Spec.Selector.MatchLabels).Matches(labels.Set(s.Spec.Template.Labels)) {
				selected++
			}
		}
		if selected != 1 {
			t.Errorf("PodDisruptionBudget %s selects the pods of %d StatefulSets, want 1", p.Name, selected)
		}
	}
	for _, m := range o.custom {
		if m["kind"] != "ServiceMonitor" {
			continue
		}
		spec, _ := m["spec"].(map[string]any)
		sel, _ := spec["selector"].(map[string]any)
		ml, _ := sel["matchLabels"].(map[string]any)
		want := labels.Set{}
		for k, v := range ml {
			want[k], _ = v.(string)
		}
		var svc *corev1.Service
		for i := range o.services {
			if len(want) > 0 && labels.SelectorFromSet(want).Matches(labels.Set(o.services[i].Labels)) {
				if svc != nil {
					t.Errorf("ServiceMonitor selector %v selects more than one Service", want)
				}
				svc = &o.services[i]
			}
		}
		if svc == nil {
			t.Errorf("ServiceMonitor selector %v selects no Service", want)
			continue
		}
		eps, _ := spec["endpoints"].([]any)
		for _, e := range eps {
			port, _ := e.(map[string]any)["port"].(string)
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
				t.Errorf("ServiceMonitor for %s scrapes port %q, which the Service lacks", svc.Name, port)
			}
		}
	}
}
