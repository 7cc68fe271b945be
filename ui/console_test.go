package ui

import (
	"errors"
	"fmt"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

func TestRefusal(t *testing.T) {
	validation := kernel.Errorf(kernel.CodeValidation, "the name is empty")
	t.Run("an error with one of the handler's codes is a refusal the page shows", func(t *testing.T) {
		if !refusal(validation, kernel.CodeConflict, kernel.CodeValidation) {
			t.Fatal("a validation error is not a refusal when validation is among the codes")
		}
	})
	t.Run("a wrapped error keeps its code", func(t *testing.T) {
		if !refusal(fmt.Errorf("renaming: %w", validation), kernel.CodeValidation) {
			t.Fatal("a wrapped validation error is not a refusal")
		}
	})
	t.Run("a code the handler did not name goes to the error page", func(t *testing.T) {
		if refusal(kernel.Errorf(kernel.CodeForbidden, "no"), kernel.CodeValidation, kernel.CodeConflict) {
			t.Fatal("forbidden is a refusal though the handler named only validation and conflict")
		}
	})
	t.Run("an error without a code goes to the error page", func(t *testing.T) {
		if refusal(errors.New("disk full"), kernel.CodeValidation, kernel.CodeConflict) {
			t.Fatal("an error without a code is a refusal")
		}
	})
	t.Run("no error is no refusal", func(t *testing.T) {
		if refusal(nil, kernel.CodeValidation) {
			t.Fatal("nil is a refusal")
		}
	})
}
