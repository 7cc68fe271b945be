package httpapi

import (
	"net/http"

	"bothy.dev/bothy/app/kernel"
)

// The adapters below turn a handler that takes what its route needs (the {id} of the path, the
// decoded body) into a Handler, in the order every route applies them: the id first, so that a
// malformed one is not found whatever the body, then the body. The answer helpers turn a use
// case's results into a handler's, so that a handler ends on the call it exists for.

// withID serves a route on the resource named by the path's {id}.
func withID(h func(r *Request, id kernel.ID) (int, any, error)) Handler {
	return func(r *Request) (int, any, error) {
		id, err := r.PathID("id")
		if err != nil {
			return 0, nil, err
		}
		return h(r, id)
	}
}

// withBody serves a route whose JSON body decodes into a T.
func withBody[T any](h func(r *Request, in T) (int, any, error)) Handler {
	return func(r *Request) (int, any, error) {
		in, err := decodeBody[T](r)
		if err != nil {
			return 0, nil, err
		}
		return h(r, in)
	}
}

// withIDBody serves a route on the resource named by the path's {id} whose JSON body decodes
// into a T.
func withIDBody[T any](h func(r *Request, id kernel.ID, in T) (int, any, error)) Handler {
	return withID(func(r *Request, id kernel.ID) (int, any, error) {
		in, err := decodeBody[T](r)
		if err != nil {
			return 0, nil, err
		}
		return h(r, id, in)
	})
}

// checkedBody is a body with a rule its shape cannot say (a member that must be present, or
// not empty when present): decodeBody applies it straight after decoding.
type checkedBody interface{ check() error }

// decodeBody decodes the body of r into a T and, when a T is a checkedBody, checks it.
func decodeBody[T any](r *Request) (T, error) {
	var in T
	if err := r.Decode(&in); err != nil {
		return in, err
	}
	if c, ok := any(in).(checkedBody); ok {
		if err := c.check(); err != nil {
			return in, err
		}
	}
	return in, nil
}

// ok answers v with 200, or the error.
func ok[T any](v T, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// created answers v with 201, or the error.
func created[T any](v T, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, v, nil
}

// noContent answers 204 without a body, or the error.
func noContent(err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// list answers an unpaginated list with 200, or the error.
func list[T any](items []T, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, itemsList[T]{Items: nonNil(items)}, nil
}

// page answers a page of a keyset-paginated list with 200, or the error.
func page[T any](items []T, more bool, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, itemsPage[T]{Items: nonNil(items), HasMore: more}, nil
}

// listViews answers an unpaginated list with 200, each item as view shows it, or the error.
func listViews[T, V any](view func(T) V) func(items []T, err error) (int, any, error) {
	return func(items []T, err error) (int, any, error) {
		if err != nil {
			return 0, nil, err
		}
		out := itemsList[V]{Items: make([]V, 0, len(items))}
		for _, it := range items {
			out.Items = append(out.Items, view(it))
		}
		return http.StatusOK, out, nil
	}
}
