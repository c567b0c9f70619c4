// Command kro-features reads lines from standard input, each a JSON string holding a
// `--feature-gates` value, and prints one line per input: upstream kro v0.9.4's answer after
// setting that value on a fresh copy of its gates, `{"error":true}` when it refuses it, else
// `{"CELOmitFunction":false,...}` with every gate's state. kro-graph's differential test
// (crates/kro-graph/tests/feature_gates_upstream.rs) compares these with kro-graph's answers.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/component-base/featuregate"

	"github.com/kubernetes-sigs/kro/pkg/features"
)

func main() {
	gates := []featuregate.Feature{
		features.CELOmitFunction,
		features.InstanceConditionEvents,
		features.InstanceConditionMetrics,
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var value string
		if err := json.Unmarshal(in.Bytes(), &value); err != nil {
			fail(fmt.Errorf("an input line is not a JSON string: %w", err))
		}
		gate := features.FeatureGate.DeepCopy()
		var answer any
		if err := gate.Set(value); err != nil {
			answer = map[string]bool{"error": true}
		} else {
			enabled := map[string]bool{}
			for _, feature := range gates {
				enabled[string(feature)] = gate.Enabled(feature)
			}
			answer = enabled
		}
		line, err := json.Marshal(answer)
		if err != nil {
			fail(err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kro-features:", err)
	os.Exit(1)
}
