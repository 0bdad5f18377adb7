// Package children is a golden case: child workflow steps (input by
// expressions, by code, from a file in another directory) and event waits.
package children
