package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Attributes the semantic conventions name spans after: the stable ones, and the HTTP ones of
// v1.20 and before (http.method), which many instrumentations still emit.
const (
	attrHTTPRequestMethod      = "http.request.method"
	attrHTTPMethodOld          = "http.method"
	attrHTTPRoute              = "http.route"
	attrURLTemplate            = "url.template"
	attrRPCService             = "rpc.service"
	attrRPCMethod              = "rpc.method"
	attrDBQuerySummary         = "db.query.summary"
	attrDBOperationName        = "db.operation.name"
	attrDBCollectionName       = "db.collection.name"
	attrDBStoredProcedureName  = "db.stored_procedure.name"
	attrMessagingOperationName = "messaging.operation.name"
	attrMessagingDestTemplate  = "messaging.destination.template"
	attrMessagingDestName      = "messaging.destination.name"
	attrMessagingDestTemporary = "messaging.destination.temporary"
	attrMessagingDestAnonymous = "messaging.destination.anonymous"
)

// semconvAttrs are the attributes of one span that a semantic-conventions name is built from.
type semconvAttrs struct {
	method, oldMethod, route, urlTemplate     string
	rpcService, rpcMethod                     string
	dbSummary, dbOperation, dbCollection      string
	dbProcedure                               string
	msgOperation, msgTemplate, msgDestination string
	msgUnnamed                                bool // destination temporary or anonymous
}

// appendSemconvName appends the span's name as the semantic conventions define it, and
// reports whether the span has the attributes for one (renamed), and whether it has a
// non-empty string http.route, whatever its name (route, as hasRoute). Only string
// attributes count. In order:
//
//   - HTTP server span (kind SERVER) with http.route: "{method} {http.route}";
//     HTTP client span (kind CLIENT) with url.template: "{method} {url.template}"; {method} is
//     http.request.method (else http.method), "HTTP" when it is "_OTHER". Without a route or
//     template the name is kept: the conventions' fallback, "{method}" alone, would throw
//     away the name of well-instrumented spans that carry their route only in the name.
//   - rpc.service and rpc.method: "{rpc.service}/{rpc.method}".
//   - db.query.summary: itself; else db.operation.name with db.collection.name (or
//     db.stored_procedure.name): "{db.operation.name} {target}".
//   - messaging.operation.name with messaging.destination.template, or with
//     messaging.destination.name unless the destination is temporary or anonymous:
//     "{messaging.operation.name} {destination}".
//
// The attribute values are used as they are (a route is never rewritten further here).
func appendSemconvName[S traceview.Source](dst []byte, span *traceview.Span[S]) (out []byte, renamed, route bool) {
	attrs := span.Attributes()
	if !semconvMayApply(attrs, span.Kind()) {
		return dst, false, false
	}
	return appendSemconvNameFromValues(dst, attrs, span.Kind())
}

// appendSemconvNameFromValues is appendSemconvName after semconvMayApply: the pass over the
// values that decides.
func appendSemconvNameFromValues[S traceview.Source](dst []byte, attrs traceview.Attrs[S], kind ptrace.SpanKind) (out []byte, renamed, route bool) {
	var a semconvAttrs
	for k, val := range attrs.All() {
		if !isSemconvKey(k) {
			continue
		}
		v := val.Val(nil)
		if v.Type() == pcommon.ValueTypeBool {
			if (k == attrMessagingDestTemporary || k == attrMessagingDestAnonymous) && v.Bool() {
				a.msgUnnamed = true
			}
			continue
		}
		if v.Type() != pcommon.ValueTypeStr {
			continue
		}
		switch k {
		case attrHTTPRequestMethod:
			a.method = v.Str()
		case attrHTTPMethodOld:
			a.oldMethod = v.Str()
		case attrHTTPRoute:
			a.route = v.Str()
		case attrURLTemplate:
			a.urlTemplate = v.Str()
		case attrRPCService:
			a.rpcService = v.Str()
		case attrRPCMethod:
			a.rpcMethod = v.Str()
		case attrDBQuerySummary:
			a.dbSummary = v.Str()
		case attrDBOperationName:
			a.dbOperation = v.Str()
		case attrDBCollectionName:
			a.dbCollection = v.Str()
		case attrDBStoredProcedureName:
			a.dbProcedure = v.Str()
		case attrMessagingOperationName:
			a.msgOperation = v.Str()
		case attrMessagingDestTemplate:
			a.msgTemplate = v.Str()
		case attrMessagingDestName:
			a.msgDestination = v.Str()
		}
	}
	method := a.method
	if method == "" {
		method = a.oldMethod
	}
	if method != "" {
		var target string
		switch kind {
		case ptrace.SpanKindServer:
			target = a.route
		case ptrace.SpanKindClient:
			target = a.urlTemplate
		}
		if target != "" {
			if method == "_OTHER" {
				method = "HTTP"
			}
			return append(append(append(dst, method...), ' '), target...), true, a.route != ""
		}
	}
	if a.rpcService != "" && a.rpcMethod != "" {
		return append(append(append(dst, a.rpcService...), '/'), a.rpcMethod...), true, a.route != ""
	}
	if a.dbSummary != "" {
		return append(dst, a.dbSummary...), true, a.route != ""
	}
	if a.dbOperation != "" {
		target := a.dbCollection
		if target == "" {
			target = a.dbProcedure
		}
		if target != "" {
			return append(append(append(dst, a.dbOperation...), ' '), target...), true, a.route != ""
		}
	}
	if a.msgOperation != "" {
		dest := a.msgTemplate
		if dest == "" && !a.msgUnnamed {
			dest = a.msgDestination
		}
		if dest != "" {
			return append(append(append(dst, a.msgOperation...), ' '), dest...), true, a.route != ""
		}
	}
	return dst, false, a.route != ""
}

// Which of the attributes appendSemconvName reads a span has, by key alone (semconvMayApply).
const (
	keyMethod = 1 << iota // http.request.method or http.method
	keyURLTemplate
	keyRPCService
	keyRPCMethod
	keyDBSummary
	keyDBOperation
	keyDBTarget // db.collection.name or db.stored_procedure.name
	keyMsgOperation
	keyMsgDestination // messaging.destination.template or .name
)

// semconvMayApply reports whether span has the keys for a semantic-conventions name or an
// http.route, whatever their values; when it does not, appendSemconvName can only keep the
// name, and returns at once. The pass reads keys only: most spans carry few of these keys
// (a method without a route, say) and for them it replaces reading each attribute's value,
// the 200-byte record of values and the decision (BenchmarkLayers/series=100k/reduce/semconv).
// A true answer is only a maybe: the values decide, as before.
func semconvMayApply[S traceview.Source](attrs traceview.Attrs[S], kind ptrace.SpanKind) bool {
	var has uint16
	for k := range attrs.All() {
		switch k {
		case attrHTTPRequestMethod, attrHTTPMethodOld:
			has |= keyMethod
		case attrHTTPRoute:
			return true // the caller needs it, renamed or not
		case attrURLTemplate:
			has |= keyURLTemplate
		case attrRPCService:
			has |= keyRPCService
		case attrRPCMethod:
			has |= keyRPCMethod
		case attrDBQuerySummary:
			has |= keyDBSummary
		case attrDBOperationName:
			has |= keyDBOperation
		case attrDBCollectionName, attrDBStoredProcedureName:
			has |= keyDBTarget
		case attrMessagingOperationName:
			has |= keyMsgOperation
		case attrMessagingDestTemplate, attrMessagingDestName:
			has |= keyMsgDestination
		}
	}
	all := func(bits uint16) bool { return has&bits == bits }
	return all(keyMethod|keyURLTemplate) && kind == ptrace.SpanKindClient ||
		all(keyRPCService|keyRPCMethod) ||
		all(keyDBSummary) ||
		all(keyDBOperation|keyDBTarget) ||
		all(keyMsgOperation|keyMsgDestination)
}

// hasRoute reports whether span carries a non-empty string http.route, as
// appendSemconvName reads it: its name is for from_semantic_conventions (and rules) to
// give, never clustered, whether or not that layer is on. With that layer on, its pass over
// the attributes tells, and this is not called.
func hasRoute[S traceview.Source](attrs traceview.Attrs[S]) bool {
	v, ok := attrs.GetVal(attrHTTPRoute, nil)
	return ok && v.Str() != ""
}

// isSemconvKey reports whether appendSemconvNameFromValues reads the value of key k: the
// values of the others are not read at all.
func isSemconvKey(k string) bool {
	switch k {
	case attrHTTPRequestMethod, attrHTTPMethodOld, attrHTTPRoute, attrURLTemplate, attrRPCService,
		attrRPCMethod, attrDBQuerySummary, attrDBOperationName, attrDBCollectionName,
		attrDBStoredProcedureName, attrMessagingOperationName, attrMessagingDestTemplate,
		attrMessagingDestName, attrMessagingDestTemporary, attrMessagingDestAnonymous:
		return true
	}
	return false
}
