package kernel

import "encoding/json"

// MarshalEmptyAsNull writes a string-valued field as JSON, the empty value as null: for the
// optional texts (a message's client_msg_id, a run's reason) whose absence clients read as null.
func MarshalEmptyAsNull[T ~string](v T) ([]byte, error) {
	if v == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(v))
}

// UnmarshalNullAsEmpty reads what MarshalEmptyAsNull writes: null as the empty value.
func UnmarshalNullAsEmpty[T ~string](b []byte, v *T) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*v = ""
	if s != nil {
		*v = T(*s)
	}
	return nil
}
