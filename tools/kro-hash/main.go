// Command kro-hash reads lines from standard input, each the JSON of a ResourceGraphDefinition's
// `spec`, and prints one line per input: the hash upstream kro v0.9.4 labels its GraphRevisions
// with (`pkg/graph/hash.Spec` on the spec decoded into its typed API), or `error` when the spec
// does not decode into upstream's types. kro-graph's differential test
// (crates/kro-graph/tests/graph_revision_hash_upstream.rs) compares these with `spec_hash`.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kubernetes-sigs/kro/api/v1alpha1"
	"github.com/kubernetes-sigs/kro/pkg/graph/hash"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var spec v1alpha1.ResourceGraphDefinitionSpec
		answer := "error"
		if err := json.Unmarshal(in.Bytes(), &spec); err == nil {
			if sum, err := hash.Spec(spec); err == nil {
				answer = sum
			}
		}
		out.WriteString(answer)
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
	fmt.Fprintln(os.Stderr, "kro-hash:", err)
	os.Exit(1)
}
