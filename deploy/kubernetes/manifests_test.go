// Package kubernetes holds the tests of the manifests in this folder: every document parses into
// the real Kubernetes API types (unknown fields are errors), and the workloads hang together
// (selectors, ports, mounted ConfigMaps, security context, resources).
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// manifests is every object of every *.yaml in this folder but kustomization.yaml, typed.
type manifests struct {
	namespaces   []*corev1.Namespace
	configMaps   map[string]*corev1.ConfigMap
	services     []*corev1.Service
	statefulSets []*appsv1.StatefulSet
	deployments  []*appsv1.Deployment
	daemonSets   []*appsv1.DaemonSet
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	pdbs         []*policyv1.PodDisruptionBudget
	podMonitors  []*monitoringv1.PodMonitor
	objects      []metav1.Object // all of the above
	files        []string
}

// newObject returns an empty typed object for apiVersion/kind, or nil for a kind the folder is
// not expected to hold.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Service":
		return &corev1.Service{}
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "apps/v1 DaemonSet":
		return &appsv1.DaemonSet{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}
	}
	return nil
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	m := &manifests{configMaps: map[string]*corev1.ConfigMap{}}
	for _, f := range files {
		if f == "kustomization.yaml" {
			continue
		}
		m.files = append(m.files, f)
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, doc := range docSeparator.Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &head), "%s document %d", f, i)
			obj := newObject(head.APIVersion, head.Kind)
			require.NotNil(t, obj, "%s document %d: unexpected %s %s", f, i, head.APIVersion, head.Kind)
			// Strict: a misspelt or misplaced field is an error, as the API server's field
			// validation would report it.
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "%s document %d (%s)", f, i, head.Kind)
			m.objects = append(m.objects, obj.(metav1.Object))
			switch o := obj.(type) {
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o)
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Service:
				m.services = append(m.services, o)
			case *appsv1.StatefulSet:
				m.statefulSets = append(m.statefulSets, o)
			case *appsv1.Deployment:
				m.deployments = append(m.deployments, o)
			case *appsv1.DaemonSet:
				m.daemonSets = append(m.daemonSets, o)
			case *autoscalingv2.HorizontalPodAutoscaler:
				m.hpas = append(m.hpas, o)
			case *policyv1.PodDisruptionBudget:
				m.pdbs = append(m.pdbs, o)
			case *monitoringv1.PodMonitor:
				m.podMonitors = append(m.podMonitors, o)
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// workload is a pod template with the name of what owns it.
type workload struct {
	name string
	pod  corev1.PodTemplateSpec
}

func (m *manifests) workloads() []workload {
	var w []workload
	for _, s := range m.statefulSets {
		w = append(w, workload{"StatefulSet " + s.Name, s.Spec.Template})
	}
	for _, d := range m.deployments {
		w = append(w, workload{"Deployment " + d.Name, d.Spec.Template})
	}
	for _, d := range m.daemonSets {
		w = append(w, workload{"DaemonSet " + d.Name, d.Spec.Template})
	}
	return w
}

func TestManifestsParseIntoAPITypes(t *testing.T) {
	m := loadManifests(t)
	require.Len(t, m.statefulSets, 1, "the gateway StatefulSet")
	require.Len(t, m.deployments, 2, "the graph gateway and edge gateway Deployments")
	require.Len(t, m.daemonSets, 1, "the agent DaemonSet")
	require.Len(t, m.hpas, 3, "gateways, graph gateways, edge gateways")
	require.Len(t, m.pdbs, 3, "gateways, graph gateways, edge gateways")
	require.Len(t, m.podMonitors, 1)
	require.Contains(t, m.configMaps, "otelcol-red-gateway")
	require.Contains(t, m.configMaps, "otelcol-red-graph-gateway")
	require.Contains(t, m.configMaps, "otelcol-red-edge-gateway")
	require.Contains(t, m.configMaps, "otelcol-red-agent")
	require.Len(t, m.namespaces, 1)
	ns := m.namespaces[0].Name
	for _, o := range m.objects {
		if _, isNS := o.(*corev1.Namespace); isNS {
			continue
		}
		assert.Equal(t, ns, o.GetNamespace(), "%T %s: namespace", o, o.GetName())
	}
}

// TestKustomizationListsEveryManifest keeps `kubectl apply -k` in step with the folder.
func TestKustomizationListsEveryManifest(t *testing.T) {
	m := loadManifests(t)
	b, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	require.NoError(t, yaml.UnmarshalStrict(b, &k))
	assert.Equal(t, "Kustomization", k.Kind)
	got := append([]string(nil), k.Resources...)
	sort.Strings(got)
	want := append([]string(nil), m.files...)
	sort.Strings(want)
	assert.Equal(t, want, got)
}

func TestWorkloadsAreLockedDown(t *testing.T) {
	m := loadManifests(t)
	for _, w := range m.workloads() {
		pod := w.pod.Spec
		require.NotNil(t, pod.SecurityContext, w.name)
		require.NotNil(t, pod.SecurityContext.RunAsNonRoot, w.name)
		assert.True(t, *pod.SecurityContext.RunAsNonRoot, "%s: runAsNonRoot", w.name)
		require.NotNil(t, pod.SecurityContext.RunAsUser, w.name)
		// The image's user (Dockerfile: USER 10001).
		assert.EqualValues(t, 10001, *pod.SecurityContext.RunAsUser, "%s: runAsUser", w.name)
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			require.NotNil(t, sc, "%s/%s", w.name, c.Name)
			require.NotNil(t, sc.ReadOnlyRootFilesystem, "%s/%s", w.name, c.Name)
			assert.True(t, *sc.ReadOnlyRootFilesystem, "%s/%s: readOnlyRootFilesystem", w.name, c.Name)
			require.NotNil(t, sc.AllowPrivilegeEscalation, "%s/%s", w.name, c.Name)
			assert.False(t, *sc.AllowPrivilegeEscalation, "%s/%s: allowPrivilegeEscalation", w.name, c.Name)
			require.NotNil(t, sc.Capabilities, "%s/%s", w.name, c.Name)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "%s/%s: capabilities", w.name, c.Name)

			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				_, ok := c.Resources.Requests[r]
				assert.True(t, ok, "%s/%s: %s request", w.name, c.Name, r)
			}
			limit, ok := c.Resources.Limits[corev1.ResourceMemory]
			require.True(t, ok, "%s/%s: memory limit", w.name, c.Name)
			assert.GreaterOrEqual(t, limit.Cmp(c.Resources.Requests[corev1.ResourceMemory]), 0, "%s/%s: limit ≥ request", w.name, c.Name)
			// The runtime knows the container limit, a soft goal below it: GOMEMLIMIT, or the
			// gcheadroom extension's share of the cgroup's limit.
			if v := envValue(c, "GOMEMLIMIT"); v != "" {
				q, err := resource.ParseQuantity(strings.TrimSuffix(v, "B"))
				require.NoError(t, err, "%s/%s: GOMEMLIMIT=%s", w.name, c.Name, v)
				assert.Equal(t, -1, q.Cmp(limit), "%s/%s: GOMEMLIMIT below the memory limit", w.name, c.Name)
				assert.Equal(t, 1, q.Cmp(c.Resources.Requests[corev1.ResourceMemory]), "%s/%s: GOMEMLIMIT above the request", w.name, c.Name)
			} else {
				cfg := mergedConfig(t, m, pod, c)
				service, _ := cfg["service"].(map[string]any)
				assert.Contains(t, asList(service["extensions"]), "gcheadroom", "%s/%s: no GOMEMLIMIT and no gcheadroom", w.name, c.Name)
				ext, _ := cfg["extensions"].(map[string]any)
				gc, _ := ext["gcheadroom"].(map[string]any)
				pct, _ := gc["memory_limit_percentage"].(float64)
				assert.True(t, pct > 0 && pct < 100, "%s/%s: without GOMEMLIMIT, gcheadroom's memory_limit_percentage sets the Go memory limit below the container's (got %v)", w.name, c.Name, gc["memory_limit_percentage"])
				if pct > 0 {
					goal := limit.Value() / 100 * int64(pct)
					assert.Greater(t, goal, c.Resources.Requests.Memory().Value(), "%s/%s: the Go memory limit above the request", w.name, c.Name)
				}
			}

			ports := map[string]bool{}
			for _, p := range c.Ports {
				ports[p.Name] = true
			}
			for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				require.NotNil(t, probe, "%s/%s: probes", w.name, c.Name)
				require.NotNil(t, probe.HTTPGet, "%s/%s: HTTP probe", w.name, c.Name)
				assert.True(t, ports[probe.HTTPGet.Port.String()], "%s/%s: probe port %s is a container port", w.name, c.Name, probe.HTTPGet.Port.String())
			}
		}
	}
}

// envValue returns a container's literal environment value of name.
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkScaledTier checks the objects around a tier of interchangeable Kafka consumers (gateways,
// graph gateways, edge gateways): the workload's selector, its headless Service, its HPA and PDB
// select its pods and no other workload's, and the PodMonitor and the scrape annotations reach its
// metrics port, or its telemetry port for a tier that serves no metrics of its own (graph
// gateways hand their edges on). It returns the container ports by name.
func checkScaledTier(t *testing.T, m *manifests, kind, name string, selector *metav1.LabelSelector, pod corev1.PodTemplateSpec, serviceName string) map[string]int32 {
	t.Helper()
	podLabels := labels.Set(pod.Labels)
	sel, err := metaSelector(selector.MatchLabels)
	require.NoError(t, err)
	assert.True(t, sel.Matches(podLabels), "%s selector matches its pods", name)
	// Pods of every other workload: a selector of this tier must match none of them.
	var others []workload
	for _, w := range m.workloads() {
		if w.name != kind+" "+name {
			others = append(others, w)
		}
	}
	require.Len(t, others, len(m.workloads())-1, "%s %s is among the workloads", kind, name)
	selectsOnlyThis := func(what string, s labels.Selector) {
		t.Helper()
		assert.True(t, s.Matches(podLabels), "%s selects the pods of %s", what, name)
		for _, o := range others {
			assert.False(t, s.Matches(labels.Set(o.pod.Labels)), "%s selects the pods of %s too", what, o.name)
		}
	}

	var svc *corev1.Service
	for _, s := range m.services {
		if s.Name == serviceName {
			svc = s
		}
	}
	require.NotNil(t, svc, "Service %s", serviceName)
	// Every pod is scraped (a tier's counters are summed over its pods): one DNS record per pod,
	// not a virtual IP that hands each scrape to one pod.
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "Service %s is headless", serviceName)
	selectsOnlyThis("Service "+svc.Name, labels.SelectorFromSet(svc.Spec.Selector))
	containerPorts := map[string]int32{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			containerPorts[p.Name] = p.ContainerPort
		}
	}
	for _, p := range svc.Spec.Ports {
		_, ok := containerPorts[p.TargetPort.String()]
		assert.True(t, ok, "Service %s port %s targets a container port", svc.Name, p.Name)
	}

	var hpas []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range m.hpas {
		if h.Spec.ScaleTargetRef.Kind == kind && h.Spec.ScaleTargetRef.Name == name {
			hpas = append(hpas, h)
		}
	}
	require.Len(t, hpas, 1, "one HPA scales %s %s", kind, name)
	hpa := hpas[0]
	require.Len(t, hpa.Spec.Metrics, 1)
	require.NotNil(t, hpa.Spec.Metrics[0].Resource)
	assert.Equal(t, corev1.ResourceCPU, hpa.Spec.Metrics[0].Resource.Name, "HPA %s scales on CPU", hpa.Name)
	require.NotNil(t, hpa.Spec.MinReplicas)
	assert.GreaterOrEqual(t, *hpa.Spec.MinReplicas, int32(2), "HPA %s: two pods at least, so the PDB lets one go", hpa.Name)

	var pdbs int
	for _, pdb := range m.pdbs {
		s, err := metaSelector(pdb.Spec.Selector.MatchLabels)
		require.NoError(t, err)
		if s.Matches(podLabels) {
			pdbs++
			selectsOnlyThis("PDB "+pdb.Name, s)
		}
	}
	assert.Equal(t, 1, pdbs, "one PDB covers %s", name)

	pm := m.podMonitors[0]
	pmSel, err := metaSelector(pm.Spec.Selector.MatchLabels)
	require.NoError(t, err)
	assert.True(t, pmSel.Matches(podLabels), "PodMonitor selects the pods of %s", name)
	// The operator scrapes the endpoints whose port the pod has: telemetry on every tier.
	pmPorts := map[string]bool{}
	for _, e := range pm.Spec.PodMetricsEndpoints {
		require.NotNil(t, e.Port)
		pmPorts[*e.Port] = true
	}
	require.Contains(t, containerPorts, "telemetry")
	assert.True(t, pmPorts["telemetry"], "PodMonitor scrapes the telemetry port")
	scraped := "telemetry"
	if _, ok := containerPorts["metrics"]; ok {
		scraped = "metrics"
		assert.True(t, pmPorts["metrics"], "PodMonitor scrapes the metrics port of %s", name)
	}
	assert.Equal(t, fmt.Sprint(containerPorts[scraped]), pod.Annotations["prometheus.io/port"], "%s: prometheus.io/port is the %s port", name, scraped)
	return containerPorts
}

// TestGatewayTier checks that the objects around the StatefulSet select it and that its queue
// directory is on the claimed volume.
func TestGatewayTier(t *testing.T) {
	m := loadManifests(t)
	sts := m.statefulSets[0]
	containerPorts := checkScaledTier(t, m, "StatefulSet", sts.Name, sts.Spec.Selector, sts.Spec.Template, sts.Spec.ServiceName)
	assert.Equal(t, int32(9464), containerPorts["metrics"])

	// The Elasticsearch queue directory is the mount of a volume claim.
	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	claim := sts.Spec.VolumeClaimTemplates[0]
	c := sts.Spec.Template.Spec.Containers[0]
	dir := envValue(c, "OTELCOL_RED_STORAGE_DIR")
	require.NotEmpty(t, dir)
	mounted := false
	for _, vm := range c.VolumeMounts {
		if vm.Name == claim.Name {
			mounted = vm.MountPath == dir && !vm.ReadOnly
		}
	}
	assert.True(t, mounted, "volume claim %s is mounted read-write at %s", claim.Name, dir)
	require.NotNil(t, sts.Spec.Template.Spec.SecurityContext.FSGroup, "the volume must be writable by user 10001")
}

// Partitions per graph gateway the sizing asks for (README.md here, "Sizing"): enough that a
// rebalance moves small pieces, few enough that a gateway is not idle.
const (
	minGraphPartitionsPerGateway = 2
	maxGraphPartitionsPerGateway = 8
)

// TestGraphGatewayTier checks the graph gateways' Deployment and the objects around it, and that
// they read the topic the agents write the edge spans to, with the partitions the agents key by.
func TestGraphGatewayTier(t *testing.T) {
	m := loadManifests(t)
	d := m.deployment(t, "otelcol-red-graph-gateway")
	containerPorts := checkScaledTier(t, m, "Deployment", d.Name, d.Spec.Selector, d.Spec.Template, d.Name)
	c := d.Spec.Template.Spec.Containers[0]
	assert.NotContains(t, containerPorts, "metrics", "with graph-gateway-edges.yaml a graph gateway serves no edges")
	assert.Contains(t, c.Args, "--config=/etc/otelcol-red/graph-gateway-edges.yaml")
	assert.NotEmpty(t, envValue(c, "KAFKA_EDGE_TOPIC"))

	// No disk: nothing but ConfigMaps is mounted (a Deployment's pods share no claim).
	for _, v := range d.Spec.Template.Spec.Volumes {
		assert.NotNil(t, v.ConfigMap, "graph gateway volume %s: only configuration is mounted", v.Name)
	}

	agent := m.daemonSets[0].Spec.Template.Spec.Containers[0]
	topic := envValue(agent, "KAFKA_GRAPH_TOPIC")
	require.NotEmpty(t, topic, "the agents set KAFKA_GRAPH_TOPIC")
	assert.Equal(t, topic, envValue(c, "KAFKA_GRAPH_TOPIC"), "graph gateways read the agents' graph topic")
	assert.NotEmpty(t, envValue(c, "KAFKA_GRAPH_GROUP"))
	assert.NotEqual(t, envValue(m.statefulSets[0].Spec.Template.Spec.Containers[0], "KAFKA_GROUP"), envValue(c, "KAFKA_GRAPH_GROUP"), "graph gateways have a consumer group of their own")
	assert.Equal(t, envValue(agent, "KAFKA_BROKERS"), envValue(c, "KAFKA_BROKERS"))

	// The graph topic has as many partitions as the agents' trace ID buckets; each graph gateway
	// reads 2 to 8 of them.
	buckets, err := strconv.Atoi(envValue(agent, "KAFKA_GRAPH_BUCKETS"))
	require.NoError(t, err, "the agents set KAFKA_GRAPH_BUCKETS")
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	for _, h := range m.hpas {
		if h.Spec.ScaleTargetRef.Name == d.Name {
			hpa = h
		}
	}
	require.NotNil(t, hpa)
	assert.LessOrEqual(t, int(hpa.Spec.MaxReplicas)*minGraphPartitionsPerGateway, buckets, "maxReplicas %d leaves %d partitions per graph gateway at least", hpa.Spec.MaxReplicas, minGraphPartitionsPerGateway)
	assert.GreaterOrEqual(t, int(*hpa.Spec.MinReplicas)*maxGraphPartitionsPerGateway, buckets, "minReplicas %d leaves %d partitions per graph gateway at most", *hpa.Spec.MinReplicas, maxGraphPartitionsPerGateway)
	require.NotNil(t, d.Spec.Replicas)
	assert.GreaterOrEqual(t, *d.Spec.Replicas, *hpa.Spec.MinReplicas)
	assert.LessOrEqual(t, *d.Spec.Replicas, hpa.Spec.MaxReplicas)
}

// edgeTopicPartitions is the edge topic's partition count the sizing asks for (README.md here,
// "Sizing", edge gateways).
const edgeTopicPartitions = 8

// TestEdgeGatewayTier checks the edge gateways' Deployment and the objects around it, and that
// they read the topic the graph gateways write their edges to, in a group of their own.
func TestEdgeGatewayTier(t *testing.T) {
	m := loadManifests(t)
	d := m.deployment(t, "otelcol-red-edge-gateway")
	containerPorts := checkScaledTier(t, m, "Deployment", d.Name, d.Spec.Selector, d.Spec.Template, d.Name)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, int32(9466), containerPorts["metrics"], "edge-gateway.yaml serves on 9466")
	assert.Equal(t, "$(POD_IP):9466", envValue(c, "METRICS_ENDPOINT"))
	for _, v := range d.Spec.Template.Spec.Volumes {
		assert.NotNil(t, v.ConfigMap, "edge gateway volume %s: only configuration is mounted", v.Name)
	}

	graphPod := m.deployment(t, "otelcol-red-graph-gateway").Spec.Template.Spec
	graph := graphPod.Containers[0]
	// An edge gateway drops a writer's delta that starts before that writer's last one ended: the
	// graph gateways' flushes must reach each partition in order, so their queue has one sender.
	exporters, _ := mergedConfig(t, m, graphPod, graph)["exporters"].(map[string]any)
	edgeExporter, _ := exporters["kafka/edges"].(map[string]any)
	queue, _ := edgeExporter["sending_queue"].(map[string]any)
	assert.EqualValues(t, 1, queue["num_consumers"], "graph gateways send their edge deltas with one queue sender")
	require.NotEmpty(t, envValue(c, "KAFKA_EDGE_TOPIC"))
	assert.Equal(t, envValue(graph, "KAFKA_EDGE_TOPIC"), envValue(c, "KAFKA_EDGE_TOPIC"), "edge gateways read the graph gateways' edge topic")
	assert.Equal(t, envValue(graph, "KAFKA_BROKERS"), envValue(c, "KAFKA_BROKERS"))
	group := envValue(c, "KAFKA_EDGE_GROUP")
	assert.NotEmpty(t, group)
	for _, other := range []string{envValue(graph, "KAFKA_GRAPH_GROUP"), envValue(m.statefulSets[0].Spec.Template.Spec.Containers[0], "KAFKA_GROUP")} {
		assert.NotEqual(t, other, group, "edge gateways have a consumer group of their own")
	}

	var hpa *autoscalingv2.HorizontalPodAutoscaler
	for _, h := range m.hpas {
		if h.Spec.ScaleTargetRef.Name == d.Name {
			hpa = h
		}
	}
	require.NotNil(t, hpa)
	assert.LessOrEqual(t, hpa.Spec.MaxReplicas, int32(edgeTopicPartitions), "an edge gateway reads whole partitions")
	require.NotNil(t, d.Spec.Replicas)
	assert.GreaterOrEqual(t, *d.Spec.Replicas, *hpa.Spec.MinReplicas)
	assert.LessOrEqual(t, *d.Spec.Replicas, hpa.Spec.MaxReplicas)
}

// deployment returns the Deployment called name.
func (m *manifests) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range m.deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

// TestAgentsFeedTheGateways: the agents write the spans topic the gateways read.
func TestAgentsFeedTheGateways(t *testing.T) {
	m := loadManifests(t)
	agent := m.daemonSets[0].Spec.Template.Spec.Containers[0]
	gateway := m.statefulSets[0].Spec.Template.Spec.Containers[0]
	require.NotEmpty(t, envValue(agent, "KAFKA_TOPIC"))
	assert.Equal(t, envValue(agent, "KAFKA_TOPIC"), envValue(gateway, "KAFKA_TOPIC"))
	assert.Equal(t, envValue(agent, "KAFKA_BROKERS"), envValue(gateway, "KAFKA_BROKERS"))
	assert.NotEqual(t, envValue(agent, "KAFKA_TOPIC"), envValue(agent, "KAFKA_GRAPH_TOPIC"), "the graph topic is keyed by trace ID, the spans topic by service")
}

func metaSelector(m map[string]string) (labels.Selector, error) {
	if len(m) == 0 {
		return nil, fmt.Errorf("empty selector")
	}
	return labels.SelectorFromSet(m), nil
}

// TestConfigMapsCarryTheShippedConfigs: the ConfigMaps carry the repository's configs as they
// are, so the cluster runs the configuration the repository tests; what differs in a cluster is
// in each ConfigMap's kubernetes.yaml overlay.
func TestConfigMapsCarryTheShippedConfigs(t *testing.T) {
	m := loadManifests(t)
	for _, tc := range []struct{ configMap, key, shipped string }{
		{"otelcol-red-gateway", "gateway.yaml", "kafka-gateway.yaml"},
		{"otelcol-red-agent", "agent.yaml", "agent.yaml"},
		{"otelcol-red-agent", "agent-graph.yaml", "agent-graph.yaml"},
		{"otelcol-red-graph-gateway", "graph-gateway.yaml", "graph-gateway.yaml"},
		{"otelcol-red-graph-gateway", "graph-gateway-edges.yaml", "graph-gateway-edges.yaml"},
		{"otelcol-red-edge-gateway", "edge-gateway.yaml", "edge-gateway.yaml"},
	} {
		t.Run(tc.configMap+"/"+tc.key, func(t *testing.T) {
			shipped, err := os.ReadFile(filepath.Join("..", "..", "configs", tc.shipped))
			require.NoError(t, err)
			cm, ok := m.configMaps[tc.configMap]
			require.True(t, ok, "ConfigMap %s", tc.configMap)
			got, ok := cm.Data[tc.key]
			require.True(t, ok, "ConfigMap %s has no key %s", tc.configMap, tc.key)
			assert.True(t, bytes.Equal(shipped, []byte(got)),
				"ConfigMap %s key %s differs from configs/%s: copy the file into the ConfigMap", tc.configMap, tc.key, tc.shipped)
		})
	}
}

// TestOverlayIsLoadedLast: each container loads the shipped configs of its ConfigMap, each once,
// in the order they are written, then kubernetes.yaml, which must come last to win the merge.
func TestOverlayIsLoadedLast(t *testing.T) {
	m := loadManifests(t)
	for _, w := range m.workloads() {
		for _, c := range w.pod.Spec.Containers {
			var keys []string
			for _, a := range c.Args {
				if p, ok := strings.CutPrefix(a, "--config="); ok {
					keys = append(keys, filepath.Base(p))
				}
			}
			require.GreaterOrEqual(t, len(keys), 2, "%s/%s: a shipped config and the overlay", w.name, c.Name)
			assert.Equal(t, "kubernetes.yaml", keys[len(keys)-1], "%s/%s: the overlay is the last --config", w.name, c.Name)
			var cm *corev1.ConfigMap
			for _, v := range w.pod.Spec.Volumes {
				if v.ConfigMap != nil {
					cm = m.configMaps[v.ConfigMap.Name]
				}
			}
			require.NotNil(t, cm, "%s: a ConfigMap volume", w.name)
			var want []string
			for k := range cm.Data {
				want = append(want, k)
			}
			assert.ElementsMatch(t, want, keys, "%s/%s: every key of ConfigMap %s is loaded once", w.name, c.Name, cm.Name)
		}
	}
}

// TestMountedConfigsExist: every --config a container is started with is a key of a ConfigMap
// mounted at that path.
func TestMountedConfigsExist(t *testing.T) {
	m := loadManifests(t)
	for _, w := range m.workloads() {
		for _, c := range w.pod.Spec.Containers {
			files := mountedConfigFiles(t, m, w.pod.Spec, c)
			require.NotEmpty(t, files, "%s/%s: --config arguments", w.name, c.Name)
			for arg, content := range files {
				assert.NotEmpty(t, content, "%s/%s: %s", w.name, c.Name, arg)
			}
		}
	}
}

// mountedConfigFiles maps each --config=<path> argument of c to the content of the ConfigMap key
// mounted at that path; a path that no ConfigMap provides fails the test.
func mountedConfigFiles(t *testing.T, m *manifests, pod corev1.PodSpec, c corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range c.Args {
		path, ok := strings.CutPrefix(a, "--config=")
		if !ok {
			continue
		}
		var content *string
		for _, vm := range c.VolumeMounts {
			key, ok := strings.CutPrefix(path, vm.MountPath+"/")
			if !ok {
				continue
			}
			for _, v := range pod.Volumes {
				if v.Name != vm.Name || v.ConfigMap == nil {
					continue
				}
				cm, ok := m.configMaps[v.ConfigMap.Name]
				require.True(t, ok, "%s: volume %s names ConfigMap %s, not in the manifests", c.Name, v.Name, v.ConfigMap.Name)
				data, ok := cm.Data[key]
				require.True(t, ok, "%s: ConfigMap %s has no key %s", c.Name, cm.Name, key)
				content = &data
			}
		}
		require.NotNil(t, content, "%s: %s is not on a mounted ConfigMap", c.Name, path)
		out[a] = *content
	}
	return out
}

// configEnvRef is a ${env:NAME} or ${env:NAME:-default} reference of a collector config.
var configEnvRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// configDirectory matches a `directory:` key (file_storage and its compaction directory): the
// only paths the shipped configs write to.
var configDirectory = regexp.MustCompile(`(?m)^\s*directory:\s*(\S+)\s*$`)

// TestConfigWritesGoToVolumes: with a read-only root filesystem, every directory a mounted
// config writes to must be on a writable volume, not on the image's root.
func TestConfigWritesGoToVolumes(t *testing.T) {
	m := loadManifests(t)
	dirs := 0
	for _, w := range m.workloads() {
		for _, c := range w.pod.Spec.Containers {
			// Writable: a read-write mount of anything but a ConfigMap (an emptyDir, a
			// hostPath, or a StatefulSet's volume claim, which is not among the pod's volumes).
			writable := map[string]bool{}
			for _, vm := range c.VolumeMounts {
				fromConfigMap := false
				for _, v := range w.pod.Spec.Volumes {
					if v.Name == vm.Name && v.ConfigMap != nil {
						fromConfigMap = true
					}
				}
				if !fromConfigMap && !vm.ReadOnly {
					writable[vm.MountPath] = true
				}
			}
			for arg, content := range mountedConfigFiles(t, m, w.pod.Spec, c) {
				for _, match := range configDirectory.FindAllStringSubmatch(stripComments(content), -1) {
					dir := configEnvRef.ReplaceAllStringFunc(match[1], func(ref string) string {
						sub := configEnvRef.FindStringSubmatch(ref)
						if v := envValue(c, sub[1]); v != "" {
							return v
						}
						return sub[2]
					})
					dirs++
					onVolume := false
					for mp := range writable {
						if dir == mp || strings.HasPrefix(dir, mp+"/") {
							onVolume = true
						}
					}
					assert.True(t, onVolume, "%s/%s: %s writes to %s, which is on no writable volume", w.name, c.Name, arg, dir)
				}
			}
		}
	}
	assert.Positive(t, dirs, "the gateway config keeps its queue in a directory")
}

// configListenEndpoint matches an `endpoint` value ${env:NAME:-default} whose default is a bare
// host:port: a server the collector opens (OTLP receivers, health, /metrics), not a URL it calls.
var configListenEndpoint = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*):-([^}/]+:\d+)\}$`)

// TestEndpointsListenOnThePodIP: every server the mounted configs open is moved off the image's
// 127.0.0.1 default onto the pod's IP by the container's environment, on a declared container
// port, so probes, scrapes and (agents) the applications' OTLP reach it.
func TestEndpointsListenOnThePodIP(t *testing.T) {
	m := loadManifests(t)
	endpoints := 0
	for _, w := range m.workloads() {
		for _, c := range w.pod.Spec.Containers {
			ports := map[string]bool{}
			for _, p := range c.Ports {
				ports[fmt.Sprint(p.ContainerPort)] = true
			}
			for _, match := range listenEndpoints(t, m, w.pod.Spec, c) {
				endpoints++
				v := envValue(c, match[1])
				if !assert.NotEmpty(t, v, "%s/%s: %s listens on %s unless %s is set", w.name, c.Name, match[0], match[2], match[1]) {
					continue
				}
				host, port, ok := strings.Cut(v, ":")
				require.True(t, ok, "%s/%s: %s=%s is host:port", w.name, c.Name, match[1], v)
				assert.Equal(t, "$(POD_IP)", host, "%s/%s: %s", w.name, c.Name, match[1])
				assert.True(t, ports[port], "%s/%s: %s=%s is on a container port", w.name, c.Name, match[1], v)
			}
		}
	}
	// Gateway: metrics and health; graph gateway: health; edge gateway: metrics and health; agent:
	// OTLP gRPC, OTLP HTTP, health.
	assert.GreaterOrEqual(t, endpoints, 8)
}

// listenEndpoints returns, for every receiver, exporter and extension that the service of the
// merged configs of container c uses (mergedConfig), each `endpoint` it listens on: the component,
// the environment variable and its default. A component defined but in no pipeline opens nothing.
func listenEndpoints(t *testing.T, m *manifests, pod corev1.PodSpec, c corev1.Container) [][3]string {
	t.Helper()
	merged := mergedConfig(t, m, pod, c)
	service, _ := merged["service"].(map[string]any)
	used := map[string]map[string]bool{"receivers": {}, "exporters": {}, "extensions": {}}
	for _, id := range asList(service["extensions"]) {
		used["extensions"][id] = true
	}
	pipelines, _ := service["pipelines"].(map[string]any)
	for _, p := range pipelines {
		p, _ := p.(map[string]any)
		for _, kind := range []string{"receivers", "exporters"} {
			for _, id := range asList(p[kind]) {
				used[kind][id] = true
			}
		}
	}
	var out [][3]string
	for kind, ids := range used {
		section, _ := merged[kind].(map[string]any)
		for id := range ids {
			walkEndpoints(section[id], func(v string) {
				if sub := configListenEndpoint.FindStringSubmatch(v); sub != nil {
					out = append(out, [3]string{kind + "::" + id, sub[1], sub[2]})
				}
			})
		}
	}
	return out
}

// mergedConfig merges the configs container c is started with, in their --config order, as the
// collector does (mergeConfig).
func mergedConfig(t *testing.T, m *manifests, pod corev1.PodSpec, c corev1.Container) map[string]any {
	t.Helper()
	files := mountedConfigFiles(t, m, pod, c)
	merged := map[string]any{}
	for _, a := range c.Args {
		content, ok := files[a]
		if !ok {
			continue
		}
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(content), &doc), "%s: %s", c.Name, a)
		mergeConfig(merged, doc)
	}
	return merged
}

// mergeConfig merges src into dst: maps key by key, anything else replaced.
func mergeConfig(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeConfig(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func asList(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// walkEndpoints calls f with the value of every `endpoint` key under v.
func walkEndpoints(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "endpoint" {
				f(s)
				continue
			}
			walkEndpoints(e, f)
		}
	case []any:
		for _, e := range v {
			walkEndpoints(e, f)
		}
	}
}

// queueBytesPerSpan is the disk budget per queued span the claim is checked against: a span of
// the RED pipeline with a few attributes takes well under it in the bbolt file.
const queueBytesPerSpan = 1024

// TestQueueVolumeMatchesTheImage: the queue is mounted where the image keeps it (its VOLUME), the
// pod writes to it as the image's user, and the claim holds a full queue twice (compaction on
// rebound writes a second copy of the database before removing the first).
func TestQueueVolumeMatchesTheImage(t *testing.T) {
	m := loadManifests(t)
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	require.NoError(t, err)
	volume := regexp.MustCompile(`(?m)^VOLUME \["([^"]+)"\]`).FindSubmatch(dockerfile)
	require.NotNil(t, volume, "Dockerfile declares the queue VOLUME")
	user := regexp.MustCompile(`(?m)^USER (\d+)`).FindSubmatch(dockerfile)
	require.NotNil(t, user, "Dockerfile runs as a numeric USER")

	sts := m.statefulSets[0]
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, string(volume[1]), envValue(c, "OTELCOL_RED_STORAGE_DIR"), "queue directory is the image's VOLUME")
	sc := sts.Spec.Template.Spec.SecurityContext
	require.NotNil(t, sc.FSGroup)
	require.NotNil(t, sc.RunAsUser)
	assert.Equal(t, string(user[1]), fmt.Sprint(*sc.RunAsUser), "runAsUser is the image's USER")
	assert.Equal(t, string(user[1]), fmt.Sprint(*sc.FSGroup), "fsGroup gives the image's USER the volume")

	cfg := m.configMaps["otelcol-red-gateway"].Data["gateway.yaml"]
	var parsed struct {
		Exporters map[string]struct {
			SendingQueue struct {
				Storage   string `json:"storage"`
				Sizer     string `json:"sizer"`
				QueueSize int64  `json:"queue_size"`
			} `json:"sending_queue"`
		} `json:"exporters"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cfg), &parsed))
	var queued int64
	for name, e := range parsed.Exporters {
		if e.SendingQueue.Storage == "" {
			continue
		}
		assert.Equal(t, "items", e.SendingQueue.Sizer, "%s: queue sized in spans", name)
		queued += e.SendingQueue.QueueSize
	}
	require.Positive(t, queued, "a disk-backed sending queue")
	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	claim := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	need := resource.NewQuantity(2*queued*queueBytesPerSpan, resource.BinarySI)
	assert.GreaterOrEqual(t, claim.Cmp(*need), 0, "claim %s holds %d queued spans twice at %d bytes each (%s)", claim.String(), queued, queueBytesPerSpan, need.String())
}
