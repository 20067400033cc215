package terdut

import (
	"errors"
	"fmt"
	"net/http"
)

// maxMessage bounds how much of a server's error message an APIError keeps.
const maxMessage = 256

// An APIError is a terdut-server answer with status >= 400. It names the
// method, the path (IDs only, never a key) and the server's message.
type APIError struct {
	Method     string
	Path       string
	StatusCode int
	Message    string
}

// Error implements error.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("terdut-server: %s %s: %d: %s", e.Method, e.Path, e.StatusCode, msg)
}

func statusIs(err error, code int) bool {
	var e *APIError
	return errors.As(err, &e) && e.StatusCode == code
}

// IsNotFound reports whether err is a 404 from the server. Only a 404 means
// "gone": a 403, a 5xx or a timeout never does.
func IsNotFound(err error) bool { return statusIs(err, http.StatusNotFound) }

// IsRefused reports whether err is an answer by which the server refused a
// request outright, having made nothing: 400, 401, 403, 404, 409 or 422. A
// 5xx, a timeout or any other status leaves open whether a write committed.
func IsRefused(err error) bool {
	var e *APIError
	if !errors.As(err, &e) {
		return false
	}
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// IsConflict reports whether err is a 409: the name is taken.
func IsConflict(err error) bool { return statusIs(err, http.StatusConflict) }

// IsForbidden reports whether err is a 403.
func IsForbidden(err error) bool { return statusIs(err, http.StatusForbidden) }

// IsUnauthorized reports whether err is a 401: the key is missing, unknown or
// revoked.
func IsUnauthorized(err error) bool { return statusIs(err, http.StatusUnauthorized) }
