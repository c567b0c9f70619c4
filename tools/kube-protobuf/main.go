// kube-protobuf reads and writes Kubernetes protobuf bodies with the Go types and serializer
// kube-apiserver 1.33 uses, for the embedded API server's protobuf codec test
// (crates/kro-apiserver/tests/protobuf_go.rs) to compare with.
//
// It reads JSON lines from stdin and answers each with one JSON line on stdout:
//
//	{"decode": "<base64 of a k8s\x00 envelope>"} -> {"object": <the decoded object as JSON>}
//	{"encode": <an object as JSON>}              -> {"protobuf": "<base64 of the envelope>"}
//
// or {"error": "..."} when the input cannot be read.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	imagepolicyv1alpha1 "k8s.io/api/imagepolicy/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

type request struct {
	Decode *string          `json:"decode"`
	Encode *json.RawMessage `json:"encode"`
}

type answer struct {
	Object   json.RawMessage `json:"object,omitempty"`
	Protobuf string          `json:"protobuf,omitempty"`
	Error    string          `json:"error,omitempty"`
}

func main() {
	types := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		scheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiextensionsv1beta1.AddToScheme,
		apiregistrationv1.AddToScheme,
		apiregistrationv1beta1.AddToScheme,
		admissionv1.AddToScheme,
		admissionv1beta1.AddToScheme,
		imagepolicyv1alpha1.AddToScheme,
	} {
		if err := add(types); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	serializer := protobuf.NewSerializer(types, types)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var line request
		var reply answer
		if err := json.Unmarshal(in.Bytes(), &line); err != nil {
			reply.Error = err.Error()
		} else if line.Decode != nil {
			reply = decode(serializer, *line.Decode)
		} else if line.Encode != nil {
			reply = encode(types, serializer, *line.Encode)
		} else {
			reply.Error = "neither decode nor encode"
		}
		text, err := json.Marshal(reply)
		if err != nil {
			text, _ = json.Marshal(answer{Error: err.Error()})
		}
		out.Write(text)
		out.WriteByte('\n')
		out.Flush()
	}
}

func decode(serializer *protobuf.Serializer, encoded string) answer {
	body, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return answer{Error: err.Error()}
	}
	object, kind, err := serializer.Decode(body, nil, nil)
	if err != nil {
		return answer{Error: err.Error()}
	}
	// What kube-apiserver writes: the typed object with its apiVersion and kind.
	object.GetObjectKind().SetGroupVersionKind(*kind)
	text, err := json.Marshal(object)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Object: text}
}

func encode(types *runtime.Scheme, serializer *protobuf.Serializer, text json.RawMessage) answer {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(text, &meta); err != nil {
		return answer{Error: err.Error()}
	}
	version, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return answer{Error: err.Error()}
	}
	object, err := types.New(version.WithKind(meta.Kind))
	if err != nil {
		return answer{Error: err.Error()}
	}
	if err := json.Unmarshal(text, object); err != nil {
		return answer{Error: err.Error()}
	}
	var body bytes.Buffer
	if err := serializer.Encode(object, &body); err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Protobuf: base64.StdEncoding.EncodeToString(body.Bytes())}
}
