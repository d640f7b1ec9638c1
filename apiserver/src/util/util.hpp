// apiserver/src/util: the embedded API server's pure, transport-free utilities, each a
// faithful port of the kube-apiserver behaviour clients can observe (texts included):
//   selectors.hpp        label/field selectors (apimachinery labels, fields)
//   schema.hpp           CRD structural schemas: checks, pruning, defaulting, validation,
//                        and the FieldError type shared by all validation
//   validation.hpp       names, labels, annotations, ObjectMeta
//   strategic_merge.hpp  strategic merge patch for built-in kinds
//   go_format.hpp        Go-compatible rendering of values inside messages
// Nothing here does I/O or keeps state (apart from a compiled-regex cache).
#pragma once

#include "util/go_format.hpp"
#include "util/schema.hpp"
#include "util/selectors.hpp"
#include "util/strategic_merge.hpp"
#include "util/validation.hpp"
