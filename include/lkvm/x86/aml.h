/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small encoder for ACPI Machine Language, enough to write the DSDT of a
 * virtual PC: names, integers, strings, packages, buffers, scopes, devices,
 * constant methods and resource templates.
 *
 * Every call appends to a struct aml_buf. Errors (no room, a bad name, an
 * unbalanced aml_close()) never abort: they make the buffer "failed", later
 * calls do nothing, and aml_finish() reports it once at the end.
 *
 * Blocks that carry a PkgLength (scope, device, method, package, buffer,
 * resource template) are opened by their own call and ended by aml_close(),
 * which encodes the length in as few bytes as it needs.
 */
#ifndef LKVM_X86_AML_H
#define LKVM_X86_AML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AML_MAX_DEPTH		16

/* The largest value a PkgLength can encode (28 bits), itself included. */
#define AML_PKGLEN_MAX		0x0fffffffU

struct aml_block {
	size_t start;		/* where the length field was reserved */
	uint8_t kind;
};

struct aml_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool growable;		/* data is ours to realloc() and free() */
	bool failed;
	unsigned int depth;
	struct aml_block open[AML_MAX_DEPTH];
};

/* Write into caller memory; the buffer fails rather than overflow it. */
void aml_init(struct aml_buf *b, void *mem, size_t cap);
/* Write into a heap buffer that grows as needed; release with aml_free(). */
void aml_init_growable(struct aml_buf *b);
void aml_free(struct aml_buf *b);
/* 0 if every byte was written and every block closed, else -1. */
int aml_finish(const struct aml_buf *b);

/*
 * Pure helpers, exposed for the unit tests.
 * aml_pkglen_encode: PkgLength for a block whose contents after the length
 * field are body_len bytes; returns its size (1-4), 0 if too long.
 * aml_nameseg: one 4-character segment, '_'-padded; false if not a valid
 * NameSeg. aml_eisaid_value: "PNP0A03" -> 0x030ad041; false if malformed.
 */
size_t aml_pkglen_encode(uint8_t out[4], size_t body_len);
bool aml_nameseg(uint8_t out[4], const char *seg, size_t seg_len);
bool aml_eisaid_value(const char *id, uint32_t *value);

/* Raw bytes, for what the helpers below do not cover. */
void aml_bytes(struct aml_buf *b, const void *p, size_t n);

/* Data objects */
void aml_name_path(struct aml_buf *b, const char *path); /* "\\_SB.PCI0" */
void aml_integer(struct aml_buf *b, uint64_t v);	 /* shortest form */
void aml_string(struct aml_buf *b, const char *s);
void aml_eisaid(struct aml_buf *b, const char *id);

/* Name(path, <object>): the object is whatever the next call emits. */
void aml_name(struct aml_buf *b, const char *path);
void aml_name_integer(struct aml_buf *b, const char *path, uint64_t v);
void aml_name_string(struct aml_buf *b, const char *path, const char *s);
void aml_name_eisaid(struct aml_buf *b, const char *path, const char *id);

/* Blocks: each must be ended by aml_close(). */
void aml_scope(struct aml_buf *b, const char *path);
void aml_device(struct aml_buf *b, const char *path);
void aml_method(struct aml_buf *b, const char *path, unsigned int nr_args,
		bool serialized);
void aml_package(struct aml_buf *b, unsigned int nr_elems);
void aml_buffer(struct aml_buf *b);
/* A Buffer of resource descriptors; aml_close() adds the End tag. */
void aml_resource_template(struct aml_buf *b);
void aml_close(struct aml_buf *b);

/* Return(<object>): the object is whatever the next call emits. */
void aml_return(struct aml_buf *b);
/* Method(path) { Return(v) }, e.g. a constant _STA. */
void aml_method_return_integer(struct aml_buf *b, const char *path,
			       uint64_t v);

/* Interrupt flags for aml_res_irq() and aml_res_ext_irq(). */
/* The default (0) is level-triggered, active-high and exclusive. */
#define AML_IRQ_LEVEL		0
#define AML_IRQ_ACTIVE_HIGH	0
#define AML_IRQ_EDGE		(1U << 0)
#define AML_IRQ_ACTIVE_LOW	(1U << 1)
#define AML_IRQ_SHARED		(1U << 2)
#define AML_IRQ_WAKE		(1U << 3)

/* Address space descriptor flags. */
#define AML_RES_CONSUMER	0	/* default: used by the device itself */
#define AML_RES_PRODUCER	(1U << 0)	/* a bridge window */
#define AML_RES_READONLY	(1U << 1)	/* memory only */
#define AML_RES_CACHEABLE	(1U << 2)	/* memory only */
#define AML_RES_PREFETCHABLE	(1U << 3)	/* memory only */

/* Resource descriptors, only between aml_resource_template() and close. */
void aml_res_io(struct aml_buf *b, uint16_t min, uint16_t max,
		uint8_t align, uint8_t len);
void aml_res_irq(struct aml_buf *b, unsigned int irq, unsigned int flags);
void aml_res_ext_irq(struct aml_buf *b, uint32_t gsi, unsigned int flags);
void aml_res_memory32_fixed(struct aml_buf *b, uint32_t base, uint32_t len,
			    bool writable);
void aml_res_word_bus(struct aml_buf *b, uint16_t min, uint16_t max);
void aml_res_word_io(struct aml_buf *b, uint16_t min, uint16_t max,
		     unsigned int flags);
void aml_res_dword_io(struct aml_buf *b, uint32_t min, uint32_t max,
		      unsigned int flags);
void aml_res_dword_memory(struct aml_buf *b, uint32_t min, uint32_t max,
			  unsigned int flags);
void aml_res_qword_io(struct aml_buf *b, uint64_t min, uint64_t max,
		      unsigned int flags);
void aml_res_qword_memory(struct aml_buf *b, uint64_t min, uint64_t max,
			  unsigned int flags);

#endif
