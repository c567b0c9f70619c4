// Command kro-crd prints the CustomResourceDefinition that upstream kro generates for a
// ResourceGraphDefinition, using upstream's own packages (github.com/kubernetes-sigs/kro at the
// version go.mod pins): the graph builder (pkg/graph), which compiles the SimpleSchema with
// pkg/simpleschema and synthesizes the CRD with pkg/graph/crd. kro-graph's differential test
// (crates/kro-graph/tests/crd_upstream.rs) compares these CRDs with its own.
//
// Standard input holds one JSON object per line, {"id": "...", "rgd": {...}}, the RGD as the
// API server would store it. Standard output gets one line per input line, in order:
// {"id": "...", "crd": {...}} or {"id": "...", "error": "..."}.
//
// The builder runs offline: its schema resolver and REST mapper know no kinds, so an RGD whose
// resources need schemas fails here; the test sends RGDs without resources and status. What the
// API server would add before the builder sees an RGD is added here: the defaults of
// spec.schema.group (kro.run, when absent) and spec.schema.scope (Namespaced). What the
// controller adds before creating the CRD is added too: apiVersion and kind; and the CRD is
// printed as the API server decodes it (a default whose raw text is null is no default).
// Each answer also says whether kube-apiserver's own validation of a new CRD
// (k8s.io/apiextensions-apiserver, the version upstream requires) refuses it. The CRD's status (empty, and not
// part of what kro generates) is left out, and every "required" list is sorted, because the
// builder fills it while iterating a Go map, in an order that changes from run to run.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubernetes-sigs/kro/api/v1alpha1"
	"github.com/kubernetes-sigs/kro/pkg/graph"
)

type request struct {
	ID  string          `json:"id"`
	RGD json.RawMessage `json:"rgd"`
}

type response struct {
	ID    string          `json:"id"`
	CRD   json.RawMessage `json:"crd,omitempty"`
	Error string          `json:"error,omitempty"`
	// Refused holds why kube-apiserver would refuse to create the CRD, if it would.
	Refused string `json:"refused,omitempty"`
}

// noSchemas is a schema resolver that knows no kind.
type noSchemas struct{}

func (noSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	return nil, fmt.Errorf("no schema for %v: kro-crd resolves no kinds", gvk)
}

func main() {
	builder, err := graph.NewBuilder(nil, nil,
		graph.WithSchemaResolver(noSchemas{}),
		graph.WithRESTMapper(meta.NewDefaultRESTMapper(nil)),
	)
	if err != nil {
		fail(err)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fail(fmt.Errorf("reading a request: %w", err))
		}
		resp := response{ID: req.ID}
		crd, refused, err := generate(builder, req.RGD)
		if err != nil {
			resp.Error = err.Error()
		} else {
			resp.CRD = crd
			resp.Refused = refused
		}
		line, err := json.Marshal(resp)
		if err != nil {
			fail(fmt.Errorf("writing the answer to %s: %w", req.ID, err))
		}
		fmt.Fprintln(out, string(line))
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

// generate builds the RGD and returns its CRD as JSON, with why kube-apiserver would refuse
// that CRD (empty when it would accept it); a panic in upstream's code is an error.
func generate(builder *graph.Builder, raw json.RawMessage) (crd json.RawMessage, refused string, err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			crd, refused, err = nil, "", fmt.Errorf("panic: %v", recovered)
		}
	}()
	var rgd v1alpha1.ResourceGraphDefinition
	if err := json.Unmarshal(raw, &rgd); err != nil {
		return nil, "", fmt.Errorf("decoding the RGD: %w", err)
	}
	if rgd.Spec.Schema == nil {
		return nil, "", fmt.Errorf("the RGD has no spec.schema")
	}
	// The API server defaults a group that is absent, not one that is empty.
	var fields struct {
		Spec struct {
			Schema map[string]json.RawMessage `json:"schema"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, "", fmt.Errorf("decoding the RGD: %w", err)
	}
	if _, set := fields.Spec.Schema["group"]; !set {
		rgd.Spec.Schema.Group = "kro.run"
	}
	if rgd.Spec.Schema.Scope == "" {
		rgd.Spec.Schema.Scope = v1alpha1.ResourceScopeNamespaced
	}
	built, err := builder.NewResourceGraphDefinition(&rgd, graph.RGDConfig{
		MaxCollectionSize:          1000,
		MaxCollectionDimensionSize: 5,
	})
	if err != nil {
		return nil, "", err
	}
	built.CRD.APIVersion = "apiextensions.k8s.io/v1"
	built.CRD.Kind = "CustomResourceDefinition"
	// Marshalling is where a default that is not JSON fails (upstream keeps the marker's text
	// as raw JSON): the CRD cannot even be sent, so that counts as an error.
	sent, err := json.Marshal(built.CRD)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the CRD: %w", err)
	}
	// The CRD as the API server reads what the controller sends: a default whose raw text is
	// empty or null is sent as "default": null, which decodes to no default.
	var generated extv1.CustomResourceDefinition
	if err := json.Unmarshal(sent, &generated); err != nil {
		return nil, "", fmt.Errorf("decoding the CRD: %w", err)
	}
	encoded, err := json.Marshal(&generated)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the CRD: %w", err)
	}
	var object map[string]any
	if err := json.Unmarshal(encoded, &object); err != nil {
		return nil, "", fmt.Errorf("decoding the CRD: %w", err)
	}
	refused = validateOnCreate(&generated)
	delete(object, "status")
	sortRequired(object)
	crd, err = json.Marshal(object)
	return crd, refused, err
}

// validateOnCreate runs kube-apiserver's own validation of a CRD being created (after the
// defaults and the status its create strategy sets) and returns its errors, or "".
func validateOnCreate(crd *extv1.CustomResourceDefinition) string {
	crd = crd.DeepCopy()
	extv1.SetObjectDefaults_CustomResourceDefinition(crd)
	for _, version := range crd.Spec.Versions {
		if version.Storage {
			crd.Status.StoredVersions = []string{version.Name}
		}
	}
	var internal apiextensions.CustomResourceDefinition
	if err := extv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		return fmt.Sprintf("conversion: %v", err)
	}
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

// sortRequired sorts every "required" list of strings in a decoded JSON value.
func sortRequired(value any) {
	switch value := value.(type) {
	case map[string]any:
		for key, child := range value {
			if list, ok := child.([]any); ok && key == "required" {
				sort.SliceStable(list, func(i, j int) bool {
					a, _ := list[i].(string)
					b, _ := list[j].(string)
					return a < b
				})
			}
			sortRequired(child)
		}
	case []any:
		for _, child := range value {
			sortRequired(child)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kro-crd:", err)
	os.Exit(1)
}
