// Command kro-json evaluates upstream kro v0.9.4's `json.unmarshal` (pkg/cel/library) on
// each line read from standard input, a JSON string holding the text to parse, and prints one
// line per input: the value in a typed form (`{"double":"<hex bits>"}`, `{"int":"5"}`,
// `{"string":"..."}`, `{"bool":true}`, `{"null":null}`, `{"list":[...]}`,
// `{"map":{...}}`), or `{"error":true}` when parsing fails. kro-cel's differential test
// (crates/kro-cel/tests/json_unmarshal_upstream.rs) compares these with kro-cel's answers.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/kubernetes-sigs/kro/pkg/cel/library"
)

func main() {
	env, err := cel.NewEnv(library.JSON(), cel.Variable("text", cel.StringType))
	if err != nil {
		fail(err)
	}
	ast, issues := env.Compile("json.unmarshal(text)")
	if issues != nil && issues.Err() != nil {
		fail(issues.Err())
	}
	program, err := env.Program(ast)
	if err != nil {
		fail(err)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var text string
		if err := json.Unmarshal(in.Bytes(), &text); err != nil {
			fail(fmt.Errorf("an input line is not a JSON string: %w", err))
		}
		value, _, err := program.Eval(map[string]any{"text": text})
		var line []byte
		if err != nil || types.IsError(value) {
			line = []byte(`{"error":true}`)
		} else {
			line, err = json.Marshal(typed(value))
			if err != nil {
				fail(err)
			}
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

// typed is the value with its CEL type spelled out, and doubles as their exact bits.
func typed(value ref.Val) any {
	switch v := value.(type) {
	case types.Double:
		return map[string]any{"double": strconv.FormatUint(math.Float64bits(float64(v)), 16)}
	case types.Int:
		return map[string]any{"int": strconv.FormatInt(int64(v), 10)}
	case types.Uint:
		return map[string]any{"uint": strconv.FormatUint(uint64(v), 10)}
	case types.String:
		return map[string]any{"string": string(v)}
	case types.Bool:
		return map[string]any{"bool": bool(v)}
	case types.Null:
		return map[string]any{"null": nil}
	case traits.Lister:
		items := []any{}
		iterator := v.Iterator()
		for iterator.HasNext() == types.True {
			items = append(items, typed(iterator.Next()))
		}
		return map[string]any{"list": items}
	case traits.Mapper:
		fields := map[string]any{}
		keys := []string{}
		iterator := v.Iterator()
		for iterator.HasNext() == types.True {
			key := iterator.Next()
			keys = append(keys, string(key.(types.String)))
		}
		sort.Strings(keys)
		for _, key := range keys {
			fields[key] = typed(v.Get(types.String(key)))
		}
		return map[string]any{"map": fields}
	default:
		return map[string]any{"other": fmt.Sprintf("%T", value)}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kro-json:", err)
	os.Exit(1)
}
