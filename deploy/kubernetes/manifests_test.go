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
	for _, d := range m.daemonSets {
		w = append(w, workload{"DaemonSet " + d.Name, d.Spec.Template})
	}
	return w
}

func TestManifestsParseIntoAPITypes(t *testing.T) {
	m := loadManifests(t)
	require.Len(t, m.statefulSets, 1, "the gateway StatefulSet")
	require.Len(t, m.daemonSets, 1, "the agent DaemonSet")
	require.Len(t, m.hpas, 1)
	require.Len(t, m.pdbs, 1)
	require.Len(t, m.podMonitors, 1)
	require.Contains(t, m.configMaps, "otelcol-red-gateway")
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
			// GOMEMLIMIT keeps the runtime under the container limit: a soft goal below it.
			if v := envValue(c, "GOMEMLIMIT"); v != "" {
				q, err := resource.ParseQuantity(strings.TrimSuffix(v, "B"))
				require.NoError(t, err, "%s/%s: GOMEMLIMIT=%s", w.name, c.Name, v)
				assert.Equal(t, -1, q.Cmp(limit), "%s/%s: GOMEMLIMIT below the memory limit", w.name, c.Name)
				assert.Equal(t, 1, q.Cmp(c.Resources.Requests[corev1.ResourceMemory]), "%s/%s: GOMEMLIMIT above the request", w.name, c.Name)
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

// TestGatewayTier checks that the objects around the StatefulSet select it and that its queue
// directory is on the claimed volume.
func TestGatewayTier(t *testing.T) {
	m := loadManifests(t)
	sts := m.statefulSets[0]
	podLabels := labels.Set(sts.Spec.Template.Labels)

	sel, err := metaSelector(sts.Spec.Selector.MatchLabels)
	require.NoError(t, err)
	assert.True(t, sel.Matches(podLabels), "StatefulSet selector matches its pods")

	var governing *corev1.Service
	for _, s := range m.services {
		if s.Name == sts.Spec.ServiceName {
			governing = s
		}
	}
	require.NotNil(t, governing, "serviceName %s names a Service", sts.Spec.ServiceName)
	assert.Equal(t, corev1.ClusterIPNone, governing.Spec.ClusterIP, "the governing Service is headless")
	assert.True(t, labels.SelectorFromSet(governing.Spec.Selector).Matches(podLabels), "Service selects the gateways")
	containerPorts := map[string]int32{}
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			containerPorts[p.Name] = p.ContainerPort
		}
	}
	for _, p := range governing.Spec.Ports {
		_, ok := containerPorts[p.TargetPort.String()]
		assert.True(t, ok, "Service port %s targets a container port", p.Name)
	}

	hpa := m.hpas[0]
	assert.Equal(t, "StatefulSet", hpa.Spec.ScaleTargetRef.Kind)
	assert.Equal(t, sts.Name, hpa.Spec.ScaleTargetRef.Name)
	require.Len(t, hpa.Spec.Metrics, 1)
	assert.Equal(t, corev1.ResourceCPU, hpa.Spec.Metrics[0].Resource.Name, "HPA scales on CPU")
	require.NotNil(t, hpa.Spec.MinReplicas)
	assert.GreaterOrEqual(t, *hpa.Spec.MinReplicas, int32(2), "two gateways at least, so the PDB lets one go")

	pdbSel, err := metaSelector(m.pdbs[0].Spec.Selector.MatchLabels)
	require.NoError(t, err)
	assert.True(t, pdbSel.Matches(podLabels), "PDB selects the gateways")

	pm := m.podMonitors[0]
	pmSel, err := metaSelector(pm.Spec.Selector.MatchLabels)
	require.NoError(t, err)
	assert.True(t, pmSel.Matches(podLabels), "PodMonitor selects the gateways")
	for _, e := range pm.Spec.PodMetricsEndpoints {
		require.NotNil(t, e.Port)
		_, ok := containerPorts[*e.Port]
		assert.True(t, ok, "PodMonitor port %s is a gateway port", *e.Port)
	}
	assert.Equal(t, "9464", sts.Spec.Template.Annotations["prometheus.io/port"])
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

func metaSelector(m map[string]string) (labels.Selector, error) {
	if len(m) == 0 {
		return nil, fmt.Errorf("empty selector")
	}
	return labels.SelectorFromSet(m), nil
}

// TestGatewayConfigIsTheShippedOne: the ConfigMap carries configs/kafka-gateway.yaml as it is, so
// the cluster runs the configuration the repository tests.
func TestGatewayConfigIsTheShippedOne(t *testing.T) {
	m := loadManifests(t)
	shipped, err := os.ReadFile(filepath.Join("..", "..", "configs", "kafka-gateway.yaml"))
	require.NoError(t, err)
	got := m.configMaps["otelcol-red-gateway"].Data["gateway.yaml"]
	assert.True(t, bytes.Equal(shipped, []byte(got)),
		"deploy/kubernetes/gateway-configmap.yaml gateway.yaml differs from configs/kafka-gateway.yaml: copy the file into the ConfigMap")
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
