// SPDX-License-Identifier: GPL-2.0
/*
 * MC146818 CMOS RTC and NVRAM. The clock is the host's UTC plus an offset
 * the guest can change by writing the time registers, so `hwclock -w` in a
 * guest behaves. The update cycle is never in progress: guests that wait
 * for UIP to clear read the time at once. The NVRAM carries the memory
 * sizes that PC firmware reads from it.
 */
#include <string.h>
#include <time.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define RTC_SECONDS		0x00
#define RTC_MINUTES		0x02
#define RTC_HOURS		0x04
#define RTC_DAY_OF_WEEK		0x06
#define RTC_DAY_OF_MONTH	0x07
#define RTC_MONTH		0x08
#define RTC_YEAR		0x09
#define RTC_REG_A		0x0a
#define RTC_REG_B		0x0b
#define RTC_REG_C		0x0c
#define RTC_REG_D		0x0d
#define RTC_CENTURY		0x32

#define RTC_B_24H		0x02
#define RTC_B_BINARY		0x04
#define RTC_D_VALID		0x80
#define RTC_HOUR_PM		0x80

#define CMOS_SIZE		128

/* vCPU threads only; `lock` guards the index, NVRAM and clock offset. */
struct rtc {
	struct bus_dev dev;
	pthread_mutex_t lock;
	uint8_t index;
	uint8_t cmos[CMOS_SIZE];
	time_t offset;		/* guest time - host time, in seconds */
};

static uint8_t to_bcd(unsigned int v)
{
	return (uint8_t)(((v / 10) << 4) | (v % 10));
}

static unsigned int from_bcd(uint8_t v)
{
	return (v >> 4) * 10 + (v & 0x0f);
}

static uint8_t rtc_encode(const struct rtc *r, unsigned int v)
{
	return (r->cmos[RTC_REG_B] & RTC_B_BINARY) ? v : to_bcd(v);
}

static unsigned int rtc_decode(const struct rtc *r, uint8_t v)
{
	return (r->cmos[RTC_REG_B] & RTC_B_BINARY) ? v : from_bcd(v);
}

/* A value as the guest wrote it, if it is one: -1 for BCD junk or > max. */
static int rtc_decode_checked(const struct rtc *r, uint8_t v, unsigned int min,
			      unsigned int max)
{
	unsigned int d;

	if (!(r->cmos[RTC_REG_B] & RTC_B_BINARY) &&
	    ((v & 0x0f) > 9 || (v >> 4) > 9))
		return -1;
	d = rtc_decode(r, v);
	return d >= min && d <= max ? (int)d : -1;
}

static void rtc_guest_tm(const struct rtc *r, struct tm *tm)
{
	time_t now = time(NULL) + r->offset;

	/* the offset only ever holds a year the writes allow; still, never
	 * use a tm gmtime_r() did not fill */
	if (!gmtime_r(&now, tm)) {
		now = time(NULL);
		gmtime_r(&now, tm);
	}
}

static uint8_t rtc_hours(const struct rtc *r, const struct tm *tm)
{
	unsigned int h = tm->tm_hour;
	uint8_t pm = 0;

	if (r->cmos[RTC_REG_B] & RTC_B_24H)
		return rtc_encode(r, h);
	if (h >= 12)
		pm = RTC_HOUR_PM;
	h %= 12;
	return rtc_encode(r, h ? h : 12) | pm;
}

static uint8_t rtc_read_clock(const struct rtc *r, uint8_t index)
{
	struct tm tm;

	rtc_guest_tm(r, &tm);
	switch (index) {
	case RTC_SECONDS:	return rtc_encode(r, tm.tm_sec);
	case RTC_MINUTES:	return rtc_encode(r, tm.tm_min);
	case RTC_HOURS:		return rtc_hours(r, &tm);
	case RTC_DAY_OF_WEEK:	return rtc_encode(r, tm.tm_wday + 1);
	case RTC_DAY_OF_MONTH:	return rtc_encode(r, tm.tm_mday);
	case RTC_MONTH:		return rtc_encode(r, tm.tm_mon + 1);
	case RTC_YEAR:		return rtc_encode(r, tm.tm_year % 100);
	case RTC_CENTURY:	return rtc_encode(r, (tm.tm_year + 1900) / 100);
	default:		return r->cmos[index];
	}
}

static int rtc_write_hours(const struct rtc *r, struct tm *tm, uint8_t val)
{
	int h;

	if (r->cmos[RTC_REG_B] & RTC_B_24H) {
		h = rtc_decode_checked(r, val, 0, 23);
	} else {
		h = rtc_decode_checked(r, val & ~RTC_HOUR_PM, 1, 12);
		if (h >= 0)
			h = h % 12 + (val & RTC_HOUR_PM ? 12 : 0);
	}
	if (h < 0)
		return -1;
	tm->tm_hour = h;
	return 0;
}

/*
 * The new year from a year (yy) or century write: within 1900-2999, where
 * every date has a time_t and gmtime_r() gives it back.
 */
static int rtc_write_year(const struct rtc *r, struct tm *tm, uint8_t index,
			  uint8_t val)
{
	int year = tm->tm_year + 1900, v;

	if (index == RTC_YEAR) {
		v = rtc_decode_checked(r, val, 0, 99);
		year = year / 100 * 100 + v;
	} else {
		v = rtc_decode_checked(r, val, 19, 29);
		year = v * 100 + year % 100;
	}
	if (v < 0)
		return -1;
	tm->tm_year = year - 1900;
	return 0;
}

/*
 * A write to a time register moves the guest's clock, not the host's.
 * A value no such register can hold (BCD junk, minute 75) changes
 * nothing: taken as it came, it would roll over into the next field and
 * could push the year on for good.
 */
static void rtc_write_clock(struct rtc *r, uint8_t index, uint8_t val)
{
	struct tm tm;
	time_t t;
	int v = 0;

	rtc_guest_tm(r, &tm);
	switch (index) {
	case RTC_SECONDS:
		v = tm.tm_sec = rtc_decode_checked(r, val, 0, 59);
		break;
	case RTC_MINUTES:
		v = tm.tm_min = rtc_decode_checked(r, val, 0, 59);
		break;
	case RTC_HOURS:
		v = rtc_write_hours(r, &tm, val);
		break;
	case RTC_DAY_OF_MONTH:
		v = tm.tm_mday = rtc_decode_checked(r, val, 1, 31);
		break;
	case RTC_MONTH:
		v = rtc_decode_checked(r, val, 1, 12);
		tm.tm_mon = v - 1;
		break;
	case RTC_YEAR:
	case RTC_CENTURY:
		v = rtc_write_year(r, &tm, index, val);
		break;
	default:
		return;	/* day of week follows from the date */
	}
	if (v < 0)
		return;
	t = timegm(&tm);
	if (t != (time_t)-1)
		r->offset = t - time(NULL);
}

/* The time and date registers; 1, 3 and 5 are the alarm, plain storage. */
static bool rtc_is_clock(uint8_t index)
{
	if (index < RTC_DAY_OF_WEEK)
		return !(index & 1);
	return index <= RTC_YEAR || index == RTC_CENTURY;
}

static void rtc_read(struct bus_dev *dev, uint64_t offset, void *data,
		     unsigned int len)
{
	struct rtc *r = dev->priv;
	uint8_t val = 0xff;

	pthread_mutex_lock(&r->lock);
	if (offset == 1) {
		if (rtc_is_clock(r->index))
			val = rtc_read_clock(r, r->index);
		else
			val = r->cmos[r->index];
		if (r->index == RTC_REG_C)
			r->cmos[RTC_REG_C] = 0;	/* reading acknowledges */
	}
	pthread_mutex_unlock(&r->lock);
	memset(data, 0, len);
	*(uint8_t *)data = val;
}

static void rtc_write(struct bus_dev *dev, uint64_t offset, const void *data,
		      unsigned int len)
{
	struct rtc *r = dev->priv;
	uint8_t val = *(const uint8_t *)data;

	pthread_mutex_lock(&r->lock);
	if (offset == 0) {
		r->index = val & 0x7f;	/* bit 7 masks NMIs: nothing to do */
	} else if (rtc_is_clock(r->index)) {
		rtc_write_clock(r, r->index, val);
	} else if (r->index == RTC_REG_A) {
		r->cmos[RTC_REG_A] = val & 0x7f;	/* UIP is read-only */
	} else if (r->index != RTC_REG_C && r->index != RTC_REG_D) {
		r->cmos[r->index] = val;
	}
	pthread_mutex_unlock(&r->lock);
}

static const struct bus_ops rtc_ops = {
	.read = rtc_read,
	.write = rtc_write,
};

static void rtc_set_word(struct rtc *r, uint8_t index, uint64_t val)
{
	if (val > 0xffff)
		val = 0xffff;
	r->cmos[index] = val & 0xff;
	r->cmos[index + 1] = val >> 8;
}

/* The memory-size bytes PC firmware reads from NVRAM. */
static void rtc_fill_memory_sizes(struct rtc *r, uint64_t below_4g,
				  uint64_t above_4g)
{
	uint64_t ext_kib = below_4g > MiB ? (below_4g - MiB) / KiB : 0;
	uint64_t above_16m = below_4g > 16 * MiB ? (below_4g - 16 * MiB) >> 16 : 0;
	uint64_t high = above_4g >> 16;

	rtc_set_word(r, 0x15, 640);
	rtc_set_word(r, 0x17, ext_kib);
	rtc_set_word(r, 0x30, ext_kib);
	rtc_set_word(r, 0x34, above_16m);
	r->cmos[0x5b] = high & 0xff;
	r->cmos[0x5c] = (high >> 8) & 0xff;
	r->cmos[0x5d] = (high >> 16) & 0xff;
}

int rtc_init(struct vm *vm, uint16_t port, uint64_t ram_below_4g,
	     uint64_t ram_above_4g)
{
	struct rtc *r = vm_zalloc(vm, sizeof(*r));

	if (!r)
		return -1;
	pthread_mutex_init(&r->lock, NULL);
	r->cmos[RTC_REG_A] = 0x26;	/* 32.768 kHz base, 1024 Hz rate */
	r->cmos[RTC_REG_B] = RTC_B_24H;
	r->cmos[RTC_REG_D] = RTC_D_VALID;
	rtc_fill_memory_sizes(r, ram_below_4g, ram_above_4g);
	r->dev = (struct bus_dev) { .name = "rtc", .ops = &rtc_ops, .priv = r };
	return bus_register(&vm->pio, port, 2, &r->dev);
}
