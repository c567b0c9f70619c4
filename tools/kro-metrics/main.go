// Command kro-metrics prints, as one JSON document on standard output, every Prometheus metric
// family that upstream kro v0.9.4's controller (cmd/controller) serves on /metrics:
//
//	{"families":[{"name":"...","type":"counter|gauge|histogram|summary","help":"...",
//	  "source":"kro|controller-runtime|go|process","labels":["..."],"buckets":[...]}, ...]}
//
// sorted by name. labels are the variable label names, sorted; buckets (histograms only) are
// the classic bucket upper bounds in ascending order, without the implicit +Inf. source says
// who registers the family: kro's pkg/metrics, controller-runtime, or the Go runtime and
// process collectors controller-runtime registers (the go_* set depends on the Go version the
// binary is built with). kro-controller's test crates/kro-controller/tests/metrics_upstream.rs
// compares this with the Rust controller's scrape. Checked once against a scrape of the real
// upstream binary on a test control plane: every family served there is here, with the same
// type, labels and buckets; the rest are vectors that had no series yet.
//
// How the set is made the same as upstream's:
//
//   - Registrations. The metrics server serves controller-runtime's metrics.Registry. Its
//     collectors come from the init functions of the controller-runtime packages the binary
//     links (internal/controller/metrics: controller_runtime_* plus the Go and process
//     collectors; internal/metrics: workqueue_*; metrics: rest_client_requests_total and
//     leader_election_master_status, though not leader_election_slowpath_total, which it
//     defines but never registers; certwatcher/metrics; the webhook admission, conversion and
//     internal metrics packages), and from upstream main's first statement,
//     metrics.Register(ctrlmetrics.Registry), which registers kro's pkg/metrics families. Nothing
//     else registers into that registry later (ctrl.NewManager and mgr.Start add none; the
//     metrics server's promhttp handler is built without HandlerOpts.Registry). So this program
//     imports every package upstream's main imports (hence the same init functions run) and
//     then calls metrics.Register(ctrlmetrics.Registry) as main does, through a Registerer
//     that notes which collectors kro registered.
//   - Vectors without children. Gather omits a vector that has no child yet, so the registry's
//     collectors are listed by reflection (its unexported collectorsByID map and
//     uncheckedCollectors slice, read through unsafe), and each *CounterVec, *GaugeVec,
//     *HistogramVec and *SummaryVec gets one child: GetMetricWithLabelValues with 0, 1, 2, ...
//     placeholder values until the label count matches. kro's one custom collector,
//     instance_condition_current_status_seconds, which emits only cached conditions, gets one
//     through its exported metrics.EmitConditionMetrics.
//   - Labels. labels are the label names of the family's first gathered series less the
//     descriptor's constant labels, which are listed apart as const_labels (only go_info has
//     one, "version"); descriptors are read through reflection too.
//   - Check. Every descriptor the registry's collectors describe must then appear in Gather's
//     output, and every gathered family must be described; otherwise the program fails (a go_*
//     or process_* family the platform does not provide is only left out, with a warning).
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"unsafe"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubernetes-sigs/kro/api/v1alpha1"
	"github.com/kubernetes-sigs/kro/pkg/metrics"

	// Every other package upstream's cmd/controller/main.go imports, so that the same init
	// functions run (those of controller-runtime's metrics packages above all).
	_ "github.com/kubernetes-sigs/kro/api/internal.kro.run/v1alpha1"
	_ "github.com/kubernetes-sigs/kro/pkg/client"
	_ "github.com/kubernetes-sigs/kro/pkg/controller/graphrevision"
	_ "github.com/kubernetes-sigs/kro/pkg/controller/resourcegraphdefinition"
	_ "github.com/kubernetes-sigs/kro/pkg/dynamiccontroller"
	_ "github.com/kubernetes-sigs/kro/pkg/features"
	_ "github.com/kubernetes-sigs/kro/pkg/graph"
	_ "github.com/kubernetes-sigs/kro/pkg/graph/revisions"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apimachinery/pkg/util/runtime"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/klog/v2"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/client"
	_ "sigs.k8s.io/controller-runtime/pkg/config"
	_ "sigs.k8s.io/controller-runtime/pkg/healthz"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

type family struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Help   string   `json:"help"`
	Source string   `json:"source"`
	Labels []string `json:"labels"`
	// ConstLabels are the names of constant labels (only go_info's "version" has any).
	ConstLabels []string  `json:"const_labels,omitempty"`
	Buckets     []float64 `json:"buckets,omitempty"`
}

// recorder passes registrations on to the registry it wraps and keeps the collectors.
type recorder struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func main() {
	// What upstream's main does first.
	kro := &recorder{Registerer: ctrlmetrics.Registry}
	metrics.Register(kro)

	registry, ok := ctrlmetrics.Registry.(*prometheus.Registry)
	if !ok {
		fail(fmt.Errorf("controller-runtime's metrics.Registry is a %T, not a *prometheus.Registry", ctrlmetrics.Registry))
	}
	fromKro := map[prometheus.Collector]bool{}
	for _, c := range kro.collectors {
		fromKro[c] = true
	}

	sources := map[string]string{}       // fqName -> source
	constLabels := map[string][]string{} // fqName -> constant label names
	for _, c := range registeredCollectors(registry) {
		source := "controller-runtime"
		switch t := fmt.Sprintf("%T", c); {
		case fromKro[c]:
			source = "kro"
		case strings.Contains(t, "goCollector"):
			source = "go"
		case strings.Contains(t, "processCollector"):
			source = "process"
		}
		for _, d := range describe(c) {
			name := descName(d)
			if cl := descConstLabels(d); len(cl) > 0 {
				constLabels[name] = cl
			}
			if prev, dup := sources[name]; dup && prev != source {
				fail(fmt.Errorf("%s is described by both %s and %s", name, prev, source))
			}
			sources[name] = source
		}
		instantiate(c)
	}

	// instance_condition_current_status_seconds: one cached condition.
	inst := &unstructured.Unstructured{}
	inst.SetNamespace("_")
	inst.SetName("_")
	metrics.EmitConditionMetrics(logr.Discard(), schema.GroupVersionResource{Group: "_", Version: "_", Resource: "_"},
		inst, nil, []v1alpha1.Condition{{Type: "_", Status: "True"}})

	gathered, err := registry.Gather()
	if err != nil {
		fail(err)
	}
	var families []family
	seen := map[string]bool{}
	for _, mf := range gathered {
		name := mf.GetName()
		seen[name] = true
		source, ok := sources[name]
		if !ok {
			fail(fmt.Errorf("gathered %s, which no registered collector describes", name))
		}
		f := family{Name: name, Help: mf.GetHelp(), Source: source, Labels: []string{}}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			f.Type = "counter"
		case dto.MetricType_GAUGE:
			f.Type = "gauge"
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			f.Type = "histogram"
		case dto.MetricType_SUMMARY:
			f.Type = "summary"
		default:
			fail(fmt.Errorf("%s has type %s", name, mf.GetType()))
		}
		if len(mf.GetMetric()) == 0 {
			fail(fmt.Errorf("%s gathered without a series", name))
		}
		m := mf.GetMetric()[0]
		isConst := map[string]bool{}
		for _, l := range constLabels[name] {
			isConst[l] = true
		}
		f.ConstLabels = constLabels[name]
		for _, lp := range m.GetLabel() {
			if !isConst[lp.GetName()] {
				f.Labels = append(f.Labels, lp.GetName())
			}
		}
		sort.Strings(f.Labels)
		if f.Type == "histogram" {
			f.Buckets = []float64{}
			for _, b := range m.GetHistogram().GetBucket() {
				if ub := b.GetUpperBound(); !math.IsInf(ub, 0) {
					f.Buckets = append(f.Buckets, ub)
				}
			}
		}
		families = append(families, f)
	}
	var missing []string
	for name, source := range sources {
		switch {
		case seen[name]:
		case source == "go" || source == "process":
			// The process collector emits some families only where /proc has them.
			fmt.Fprintf(os.Stderr, "kro-metrics: warning: %s described but not gathered, left out\n", name)
		default:
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		fail(fmt.Errorf("described but not gathered: %s", strings.Join(missing, ", ")))
	}
	sort.Slice(families, func(i, j int) bool { return families[i].Name < families[j].Name })

	out, err := json.MarshalIndent(map[string]any{"families": families}, "", "  ")
	if err != nil {
		fail(err)
	}
	out = append(out, '\n')
	if _, err := os.Stdout.Write(out); err != nil {
		fail(err)
	}
}

// registeredCollectors lists the collectors in r, read from its unexported fields.
func registeredCollectors(r *prometheus.Registry) []prometheus.Collector {
	v := reflect.ValueOf(r).Elem()
	field := func(name string) reflect.Value {
		f := v.FieldByName(name)
		if !f.IsValid() {
			fail(fmt.Errorf("prometheus.Registry has no field %s", name))
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	}
	var cs []prometheus.Collector
	byID := field("collectorsByID")
	for it := byID.MapRange(); it.Next(); {
		cs = append(cs, it.Value().Interface().(prometheus.Collector))
	}
	unchecked := field("uncheckedCollectors")
	for i := 0; i < unchecked.Len(); i++ {
		cs = append(cs, unchecked.Index(i).Interface().(prometheus.Collector))
	}
	return cs
}

func describe(c prometheus.Collector) []*prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var ds []*prometheus.Desc
	for d := range ch {
		ds = append(ds, d)
	}
	return ds
}

// descName is the fqName of d, read from its String form.
func descName(d *prometheus.Desc) string {
	s := d.String()
	const prefix = `Desc{fqName: `
	if !strings.HasPrefix(s, prefix) {
		fail(fmt.Errorf("unexpected descriptor %s", s))
	}
	var name string
	if _, err := fmt.Sscanf(s[len(prefix):], "%q", &name); err != nil {
		fail(fmt.Errorf("descriptor %s: %w", s, err))
	}
	return name
}

// descConstLabels is the sorted names of d's constant labels, read from its unexported
// constLabelPairs field.
func descConstLabels(d *prometheus.Desc) []string {
	f := reflect.ValueOf(d).Elem().FieldByName("constLabelPairs")
	if !f.IsValid() {
		fail(fmt.Errorf("prometheus.Desc has no field constLabelPairs"))
	}
	pairs := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().([]*dto.LabelPair)
	var names []string
	for _, lp := range pairs {
		names = append(names, lp.GetName())
	}
	sort.Strings(names)
	return names
}

// instantiate gives a vector collector one child, with placeholder label values.
func instantiate(c prometheus.Collector) {
	var with func(lvs ...string) error
	switch v := c.(type) {
	case *prometheus.CounterVec:
		with = func(lvs ...string) error { _, err := v.GetMetricWithLabelValues(lvs...); return err }
	case *prometheus.GaugeVec:
		with = func(lvs ...string) error { _, err := v.GetMetricWithLabelValues(lvs...); return err }
	case *prometheus.HistogramVec:
		with = func(lvs ...string) error { _, err := v.GetMetricWithLabelValues(lvs...); return err }
	case *prometheus.SummaryVec:
		with = func(lvs ...string) error { _, err := v.GetMetricWithLabelValues(lvs...); return err }
	default:
		return
	}
	for n := 0; n <= 32; n++ {
		lvs := make([]string, n)
		for i := range lvs {
			lvs[i] = "_"
		}
		if with(lvs...) == nil {
			return
		}
	}
	fail(fmt.Errorf("no label count fits the vector %T", c))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kro-metrics:", err)
	os.Exit(1)
}
