package httpapi_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "bothy.dev/bothy/app/agents"
	_ "bothy.dev/bothy/app/authz"
	_ "bothy.dev/bothy/app/chat"
	_ "bothy.dev/bothy/app/dms"
	_ "bothy.dev/bothy/app/gateway"
	_ "bothy.dev/bothy/app/identity"
	_ "bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	_ "bothy.dev/bothy/app/messaging"
	_ "bothy.dev/bothy/app/notify"
	_ "bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/appliance/httpapi"
)

// The event types are a contract with clients: each has one payload type, the OpenAPI document
// (the logged ones) and docs/gateway.md (all) describe each with that payload's members, and a
// payload reads back as it was written.

func TestEventTypes(t *testing.T) {
	types := kernel.EventTypes()

	t.Run("the modules define the event types clients know", func(t *testing.T) {
		var names []string
		for _, i := range types {
			names = append(names, i.Name)
		}
		for _, want := range []string{"message.created", "user.updated", "grant.changed", "agent.invocation",
			"instance.updated", "typing.started", "run.updated"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s is not defined; defined: %v", want, names)
			}
		}
	})

	t.Run("every payload reads back equal to what was written", func(t *testing.T) {
		for _, i := range types {
			v := reflect.New(i.Payload).Elem()
			fill(v, 0)
			got, err := i.RoundTrip(v.Interface())
			if err != nil {
				t.Errorf("%s: %v", i.Name, err)
				continue
			}
			if !reflect.DeepEqual(got, v.Interface()) {
				t.Errorf("%s: wrote %+v, read %+v", i.Name, v.Interface(), got)
			}
		}
	})

	t.Run("a payload that is not of its type is an error naming the seq and the type", func(t *testing.T) {
		_, err := kernel.ViewEvent[struct {
			PrincipalID kernel.ID `json:"principal_id"`
		}]("grant.changed").Decode(kernel.LoggedEvent{Seq: 7, Type: "grant.changed", Payload: []byte(`{"principal_id":3}`)})
		var pe *kernel.PayloadError
		if !errors.As(err, &pe) || pe.Seq != 7 || pe.Type != "grant.changed" || !strings.Contains(err.Error(), "7") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("a reader's view of another module's payload reads only members the payload has", func(t *testing.T) {
		views := kernel.EventViews()
		if len(views) == 0 {
			t.Fatal("no views: the permission cache reads the events of identity, agents and chat through views")
		}
		for _, v := range views {
			i, ok := kernel.LookupEvent(v.Name)
			if !ok {
				t.Errorf("view %v of %s: the event type is not defined", v.View, v.Name)
				continue
			}
			have := jsonMembers(i.Payload)
			for _, m := range jsonMembers(v.View) {
				if !slices.Contains(have, m) {
					t.Errorf("view %v of %s reads %q, which %v does not have (%v)", v.View, v.Name, m, i.Payload, have)
				}
			}
		}
	})
}

func TestEventSchemas(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	resolve := func(s schema) schema {
		for s.Ref != "" {
			s = schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		}
		return s
	}
	ev := schemas["Event"]
	var durable []string
	for _, i := range kernel.EventTypes() {
		if i.Durable {
			durable = append(durable, i.Name)
		}
	}

	t.Run("Event lists each event type of the log once, by a discriminator on type", func(t *testing.T) {
		if ev.Discriminator.PropertyName != "type" {
			t.Fatalf("Event has no discriminator on type: %+v", ev.Discriminator)
		}
		mapped := slices.Sorted(maps.Keys(ev.Discriminator.Mapping))
		enum := slices.Sorted(slices.Values(ev.Properties["type"].Enum))
		if !slices.Equal(mapped, durable) || !slices.Equal(enum, durable) {
			t.Fatalf("Event maps %v and lists %v; the types of the log are %v", mapped, enum, durable)
		}
		if len(ev.OneOf) != len(durable) {
			t.Errorf("Event has %d schemas in oneOf, want %d", len(ev.OneOf), len(durable))
		}
		for _, name := range durable {
			ref := ev.Discriminator.Mapping[name]
			if !slices.ContainsFunc(ev.OneOf, func(s schema) bool { return s.Ref == ref }) {
				t.Errorf("%s maps to %s, which is not in oneOf", name, ref)
			}
			if got := resolve(schema{Ref: ref}).Properties["type"].Const; got != name {
				t.Errorf("the schema of %s has type const %q", name, got)
			}
		}
	})

	t.Run("the schema of each type's data has the members of its payload type", func(t *testing.T) {
		for _, name := range durable {
			data := resolve(resolve(schema{Ref: ev.Discriminator.Mapping[name]}).Properties["data"])
			info, _ := kernel.LookupEvent(name)
			got := slices.Sorted(maps.Keys(data.Properties))
			if want := jsonMembers(info.Payload); !slices.Equal(got, want) {
				t.Errorf("%s: the schema of its data has %v, the payload %v has %v", name, got, info.Payload, want)
			}
		}
	})

	t.Run("docs/gateway.md lists each event type once, with its payload", func(t *testing.T) {
		b, err := os.ReadFile("../../docs/gateway.md")
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(b), "### Event types\n")
		section, _, _ = strings.Cut(section, "\n#")
		seen := map[string]int{}
		code := regexp.MustCompile("`([^`]+)`")
		for line := range strings.Lines(section) {
			cols := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
			if len(cols) != 3 || !strings.HasPrefix(strings.TrimSpace(cols[0]), "`") {
				continue
			}
			logged := strings.TrimSpace(cols[1]) == "yes"
			var data []string
			for _, m := range code.FindAllStringSubmatch(cols[2], -1) {
				data = append(data, m[1])
			}
			for _, m := range code.FindAllStringSubmatch(cols[0], -1) {
				name := m[1]
				seen[name]++
				info, ok := kernel.LookupEvent(name)
				switch {
				case !ok:
					t.Errorf("the table lists %s, which is not defined", name)
				case info.Durable != logged:
					t.Errorf("the table says %s is logged: %v; it is durable: %v", name, logged, info.Durable)
				case logged:
					want := strings.TrimPrefix(resolve(schema{Ref: ev.Discriminator.Mapping[name]}).Properties["data"].Ref, "#/components/schemas/")
					if len(data) == 0 || data[0] != want {
						t.Errorf("the table gives %s the payload %v, the OpenAPI document %s", name, data, want)
					}
				default:
					if got, want := slices.Sorted(slices.Values(data)), jsonMembers(info.Payload); !slices.Equal(got, want) {
						t.Errorf("the table gives %s the members %v, the payload %v has %v", name, got, info.Payload, want)
					}
				}
			}
		}
		for _, i := range kernel.EventTypes() {
			if seen[i.Name] != 1 {
				t.Errorf("the table lists %s %d times, want once", i.Name, seen[i.Name])
			}
		}
	})
}

// schema is the part of a JSON Schema the test reads.
type schema struct {
	Ref           string            `json:"$ref"`
	Const         string            `json:"const"`
	Enum          []string          `json:"enum"`
	Properties    map[string]schema `json:"properties"`
	OneOf         []schema          `json:"oneOf"`
	Discriminator struct {
		PropertyName string            `json:"propertyName"`
		Mapping      map[string]string `json:"mapping"`
	} `json:"discriminator"`
}

// jsonMembers returns the names of the JSON members of struct type t, sorted, as encoding/json
// writes them (embedded structs flattened, "-" skipped).
func jsonMembers(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonMembers(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// fill sets every field of v that is on the wire to a value that is not zero, so that a member
// lost on the way reads back different.
func fill(v reflect.Value, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2026, 3, 1, 12, 0, depth, 0, time.UTC)))
		return
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(`{"k":1}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x" + strings.Repeat("y", depth))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(depth + 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(depth + 1))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 4 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		if depth > 4 {
			return
		}
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" { // "-" is not on the wire
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("x"))
		}
	}
}
