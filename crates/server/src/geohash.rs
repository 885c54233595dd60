//! Geohashes as Redis's GEO commands compute them, so that positions, distances and
//! search results match Redis's to the last digit.
//!
//! A position is stored as a sorted-set score: a 52-bit geohash, 26 bits of latitude
//! interleaved with 26 of longitude (latitude in the even bits), over the Web Mercator
//! range (latitude +-85.05112878, not +-90). A search covers its shape with the geohash
//! box around the centre and its eight neighbours, each a range of scores, at a step
//! (bits per coordinate) chosen from the radius; then it measures each candidate with
//! the haversine formula on Redis's Earth radius. The arithmetic below keeps Redis's
//! order of operations: results at the edge of a shape depend on it.

/// The coordinates a geohash can hold (EPSG:900913).
pub const LONGITUDE_MIN: f64 = -180.0;
pub const LONGITUDE_MAX: f64 = 180.0;
pub const LATITUDE_MIN: f64 = -85.05112878;
pub const LATITUDE_MAX: f64 = 85.05112878;

/// Bits per coordinate of a stored position: 2 * 26 = 52, exact in a double.
const STEP_MAX: u8 = 26;
/// The Earth's quadratic mean radius for WGS-84, Redis's constant.
const EARTH_RADIUS_METERS: f64 = 6372797.560856;
/// Half the Earth's circumference in Web Mercator metres.
const MERCATOR_MAX: f64 = 20037726.37;
const DEGREES_TO_RADIANS: f64 = std::f64::consts::PI / 180.0;

fn radians(degrees: f64) -> f64 {
    degrees * DEGREES_TO_RADIANS
}

fn degrees(radians: f64) -> f64 {
    radians / DEGREES_TO_RADIANS
}

/// A geohash of `step` bits per coordinate. Step 0 with no bits is Redis's "zero"
/// hash: a neighbour left out of a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hash {
    bits: u64,
    step: u8,
}

impl Hash {
    const NONE: Hash = Hash { bits: 0, step: 0 };

    /// The sorted-set scores of the positions inside this box: from the first
    /// (included) to the second (excluded).
    pub fn score_range(self) -> (f64, f64) {
        let align = |bits: u64| (bits << (52 - 2 * u32::from(self.step))) as f64;
        (align(self.bits), align(self.bits + 1))
    }

    /// Moved by one box east (`dx` 1) or west (-1), north (`dy` 1) or south (-1),
    /// wrapping around: longitude is in the odd bits, latitude in the even ones.
    fn moved(self, dx: i8, dy: i8) -> Hash {
        let width = 64 - 2 * u32::from(self.step);
        let shift = |bits: u64, mask: u64, d: i8| -> u64 {
            let own = bits & mask;
            // The other coordinate's bits, all set, carry an increment across them.
            let other = !mask >> width;
            let moved = match d.cmp(&0) {
                std::cmp::Ordering::Equal => return own,
                std::cmp::Ordering::Greater => own.wrapping_add(other + 1),
                std::cmp::Ordering::Less => (own | other).wrapping_sub(other + 1),
            };
            moved & (mask >> width)
        };
        const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
        const EVEN: u64 = 0x5555_5555_5555_5555;
        Hash {
            bits: shift(self.bits, ODD, dx) | shift(self.bits, EVEN, dy),
            step: self.step,
        }
    }
}

/// The bits of `lat` in the even positions, those of `lon` in the odd ones.
fn interleave(lat: u32, lon: u32) -> u64 {
    let spread = |v: u32| -> u64 {
        let mut x = u64::from(v);
        x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        x = (x | (x << 2)) & 0x3333_3333_3333_3333;
        (x | (x << 1)) & 0x5555_5555_5555_5555
    };
    spread(lat) | (spread(lon) << 1)
}

/// The inverse of [`interleave`]: (latitude bits, longitude bits).
fn deinterleave(bits: u64) -> (u32, u32) {
    let gather = |v: u64| -> u32 {
        let mut x = v & 0x5555_5555_5555_5555;
        x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
        x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
        x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
        x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
        ((x | (x >> 16)) & 0xffff_ffff) as u32
    };
    (gather(bits), gather(bits >> 1))
}

#[derive(Clone, Copy)]
struct Range {
    min: f64,
    max: f64,
}

const LONGITUDES: Range = Range {
    min: LONGITUDE_MIN,
    max: LONGITUDE_MAX,
};
const LATITUDES: Range = Range {
    min: LATITUDE_MIN,
    max: LATITUDE_MAX,
};

/// The box a hash stands for.
struct Area {
    longitude: Range,
    latitude: Range,
}

/// The hash of the box holding (`lon`, `lat`) at `step`; `None` outside the ranges.
fn encode(lon: f64, lat: f64, step: u8, lons: Range, lats: Range) -> Option<Hash> {
    let outside = |v: f64, r: Range| v < r.min || v > r.max;
    let beyond_mercator = outside(lon, LONGITUDES) || outside(lat, LATITUDES);
    if beyond_mercator || outside(lon, lons) || outside(lat, lats) {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lats.min) / (lats.max - lats.min) * scale;
    let lon_offset = (lon - lons.min) / (lons.max - lons.min) * scale;
    // Truncated, as C converts a double to an unsigned integer.
    Some(Hash {
        bits: interleave(lat_offset as u32, lon_offset as u32),
        step,
    })
}

fn decode(hash: Hash, lons: Range, lats: Range) -> Area {
    let (lat_bits, lon_bits) = deinterleave(hash.bits);
    let scale = (1u64 << hash.step) as f64;
    // `bits + 1` wraps as Redis's 32-bit sum does (only a score GEOADD did not write
    // has bits that high).
    let span = |bits: u32, r: Range| Range {
        min: r.min + (f64::from(bits) / scale) * (r.max - r.min),
        max: r.min + (f64::from(bits.wrapping_add(1)) / scale) * (r.max - r.min),
    };
    Area {
        longitude: span(lon_bits, lons),
        latitude: span(lat_bits, lats),
    }
}

/// The score that stores (`lon`, `lat`), which must be in range.
pub fn score_of(lon: f64, lat: f64) -> f64 {
    let hash = encode(lon, lat, STEP_MAX, LONGITUDES, LATITUDES)
        .expect("coordinates are checked before they are stored");
    Hash::score_range(hash).0
}

/// A score as C's conversion of a double to `uint64_t` reads it on x86-64 (Redis
/// decodes any sorted set's scores, not only those GEOADD wrote): below 2^63 through
/// a signed conversion, which answers `i64::MIN` out of range; above, offset by 2^63.
fn score_bits(score: f64) -> u64 {
    const HALF: f64 = 9_223_372_036_854_775_808.0;
    let signed = |v: f64| {
        if v.is_nan() || !(-HALF..HALF).contains(&v) {
            i64::MIN
        } else {
            v as i64
        }
    };
    if score < HALF {
        signed(score) as u64
    } else {
        (signed(score - HALF) as u64) ^ (1 << 63)
    }
}

/// The (longitude, latitude) a score stands for: the centre of its box, as GEOPOS
/// answers it.
pub fn position_of(score: f64) -> (f64, f64) {
    let hash = Hash {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    let area = decode(hash, LONGITUDES, LATITUDES);
    let centre = |r: Range, limits: Range| ((r.min + r.max) / 2.0).clamp(limits.min, limits.max);
    (
        centre(area.longitude, LONGITUDES),
        centre(area.latitude, LATITUDES),
    )
}

/// The standard 11-character geohash of a stored position (GEOHASH): re-encoded over
/// latitudes +-90, its last character always '0' since a score holds 52 bits, not 55.
pub fn text_of(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = position_of(score);
    let standard = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(lon, lat, STEP_MAX, LONGITUDES, standard).map_or(0, |h| h.bits);
    let mut text = [b'0'; 11];
    for (i, c) in text.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    text
}

fn latitude_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_METERS * (radians(lat2) - radians(lat1)).abs()
}

/// The great-circle distance in metres (haversine).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lon1r, lon2r) = (radians(lon1), radians(lon2));
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return latitude_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (radians(lat1), radians(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_METERS * a.sqrt().asin()
}

/// What a search covers, in the unit it was given in (`to_meters` converts).
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Circle { radius: f64 },
    Box { width: f64, height: f64 },
}

/// A search: a shape around a centre.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    pub lon: f64,
    pub lat: f64,
    pub shape: Shape,
    pub to_meters: f64,
}

impl Search {
    /// The distance in metres from the centre to the position of `score`, if that
    /// position is inside the shape, with the position.
    pub fn measure(&self, score: f64) -> Option<(f64, (f64, f64))> {
        let (lon, lat) = position_of(score);
        let d = match self.shape {
            Shape::Circle { radius } => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= radius * self.to_meters).then_some(d)?
            }
            Shape::Box { width, height } => {
                // Latitude first: it is the cheaper test.
                if latitude_distance(lat, self.lat) > height * self.to_meters / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width * self.to_meters / 2.0 {
                    return None;
                }
                distance(self.lon, self.lat, lon, lat)
            }
        };
        Some((d, (lon, lat)))
    }

    /// The (min lon, min lat, max lon, max lat) box around the shape.
    fn bounds(&self) -> [f64; 4] {
        let (half_height, half_width) = match self.shape {
            Shape::Circle { radius } => (radius, radius),
            Shape::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let (height, width) = (self.to_meters * half_height, self.to_meters * half_width);
        let lat_delta = degrees(height / EARTH_RADIUS_METERS);
        let lon_delta_at = |lat: f64| degrees(width / EARTH_RADIUS_METERS / radians(lat).cos());
        // The wider edge is the one nearer the pole.
        let lon_delta = if self.lat < 0.0 {
            lon_delta_at(self.lat - lat_delta)
        } else {
            lon_delta_at(self.lat + lat_delta)
        };
        [
            self.lon - lon_delta,
            self.lat - lat_delta,
            self.lon + lon_delta,
            self.lat + lat_delta,
        ]
    }

    /// The boxes to scan, in Redis's order (the centre's, then N S E W NE NW SE SW),
    /// leaving out the neighbours that cannot reach the shape.
    pub fn boxes(&self) -> Vec<Hash> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius = match self.shape {
            Shape::Circle { radius } => radius,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.to_meters;
        let mut step = steps_for(radius, self.lat);
        let at = |step| {
            encode(self.lon, self.lat, step, LONGITUDES, LATITUDES)
                .expect("a search centre is checked to be in range")
        };
        let mut centre = at(step);
        let area_of = |h: Hash| decode(h, LONGITUDES, LATITUDES);
        // Near a box's edge the estimated step can leave part of the shape outside the
        // nine boxes; one step coarser covers it.
        let too_fine = area_of(centre.moved(0, 1)).latitude.max < max_lat
            || area_of(centre.moved(0, -1)).latitude.min > min_lat
            || area_of(centre.moved(1, 0)).longitude.max < max_lon
            || area_of(centre.moved(-1, 0)).longitude.min > min_lon;
        if step > 1 && too_fine {
            step -= 1;
            centre = at(step);
        }
        let area = area_of(centre);
        let (mut north, mut south, mut east, mut west) = (true, true, true, true);
        if step >= 2 {
            south = area.latitude.min >= min_lat;
            north = area.latitude.max <= max_lat;
            west = area.longitude.min >= min_lon;
            east = area.longitude.max <= max_lon;
        }
        let keep = |wanted: bool, h: Hash| if wanted { h } else { Hash::NONE };
        let candidates = [
            centre,
            keep(north, centre.moved(0, 1)),
            keep(south, centre.moved(0, -1)),
            keep(east, centre.moved(1, 0)),
            keep(west, centre.moved(-1, 0)),
            keep(north && east, centre.moved(1, 1)),
            keep(north && west, centre.moved(-1, 1)),
            keep(south && east, centre.moved(1, -1)),
            keep(south && west, centre.moved(-1, -1)),
        ];
        // A huge radius can make neighbours the same box: one equal to the box scanned
        // before it is skipped. As in Redis, the centre's box does not count as
        // scanned before (its index, 0, reads as "none"), so a neighbour equal to it
        // is scanned again.
        let mut boxes = vec![centre];
        let mut previous = None;
        for h in candidates.into_iter().skip(1) {
            if h == Hash::NONE || previous == Some(h) {
                continue;
            }
            boxes.push(h);
            previous = Some(h);
        }
        boxes
    }
}

/// The step (bits per coordinate) whose boxes are about as large as `radius` metres:
/// coarser towards the poles, where boxes narrow.
fn steps_for(radius: f64, lat: f64) -> u8 {
    if radius == 0.0 {
        return 26;
    }
    let mut range = radius;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded, so a failure replays.
    fn uniform(seed: u64) -> impl Iterator<Item = f64> {
        let mut x = seed;
        std::iter::from_fn(move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            Some((x >> 11) as f64 / (1u64 << 53) as f64)
        })
    }

    #[test]
    fn redis_documented_values() {
        // From Redis's GEOADD / GEODIST / GEOHASH / GEOPOS documentation.
        let palermo = score_of(13.361389, 38.115556);
        let catania = score_of(15.087269, 37.502669);
        assert_eq!(palermo, 3479099956230698.0);
        assert_eq!(catania, 3479447370796909.0);
        let (p, c) = (position_of(palermo), position_of(catania));
        assert_eq!(
            format!("{:.4}", distance(p.0, p.1, c.0, c.1)),
            "166274.1516"
        );
        assert_eq!(&text_of(palermo), b"sqc8b49rny0");
        assert_eq!(&text_of(catania), b"sqdtr74hyu0");
        assert_eq!(p, (13.361389338970184, 38.1155563954963));
    }

    #[test]
    fn positions_come_back_inside_their_box() {
        let mut rng = uniform(3);
        let mut next = || rng.next().unwrap();
        // A box at step 26 is 360 / 2^26 degrees of longitude wide.
        let half_width = 360.0 / f64::from(1 << 26);
        for _ in 0..100_000 {
            let lon = LONGITUDE_MIN + next() * 360.0;
            let lat = LATITUDE_MIN + next() * (LATITUDE_MAX - LATITUDE_MIN);
            let (back_lon, back_lat) = position_of(score_of(lon, lat));
            assert!((back_lon - lon).abs() <= half_width, "{lon} {lat}");
            assert!((back_lat - lat).abs() <= half_width, "{lon} {lat}");
        }
    }

    #[test]
    fn neighbours_are_the_adjacent_boxes() {
        let at = |lon, lat, step| encode(lon, lat, step, LONGITUDES, LATITUDES).unwrap();
        // Steps fine enough that the boxes around (10, 20) do not wrap around the map.
        for step in [3u8, 5, 13, 26] {
            let width = 360.0 / (1u64 << step) as f64;
            let height = (LATITUDE_MAX - LATITUDE_MIN) / (1u64 << step) as f64;
            let (lon, lat) = (10.0, 20.0);
            let centre = at(lon, lat, step);
            let area = decode(centre, LONGITUDES, LATITUDES);
            let (mid_lon, mid_lat) = (
                (area.longitude.min + area.longitude.max) / 2.0,
                (area.latitude.min + area.latitude.max) / 2.0,
            );
            assert_eq!(centre.moved(1, 0), at(mid_lon + width, mid_lat, step));
            assert_eq!(centre.moved(-1, 0), at(mid_lon - width, mid_lat, step));
            assert_eq!(centre.moved(0, 1), at(mid_lon, mid_lat + height, step));
            assert_eq!(centre.moved(0, -1), at(mid_lon, mid_lat - height, step));
            assert_eq!(centre.moved(1, 0).moved(-1, 0), centre);
        }
    }

    /// The search's promise: every stored position inside the shape lies in one of
    /// the boxes it scans, so nothing inside is missed. Not near the poles: a shape
    /// that reaches past the last latitude a geohash holds can miss positions at the
    /// edge there, in Redis as here (its northern neighbour wraps to the south).
    #[test]
    fn the_boxes_cover_every_position_inside_the_shape() {
        let mut rng = uniform(9);
        let mut next = || rng.next().unwrap();
        let mut inside = 0;
        for round in 0..3000 {
            let lon = LONGITUDE_MIN + next() * 360.0;
            let lat = (next() * 2.0 - 1.0) * 70.0;
            let size = 10f64.powf(next() * 6.0); // 1 m to 1000 km
            let shape = if next() < 0.5 {
                Shape::Circle { radius: size }
            } else {
                Shape::Box {
                    width: size * (0.2 + next()),
                    height: size * (0.2 + next()),
                }
            };
            let search = Search {
                lon,
                lat,
                shape,
                to_meters: 1.0,
            };
            let ranges: Vec<(f64, f64)> = search.boxes().iter().map(|h| h.score_range()).collect();
            // Points scattered around the centre, some inside the shape.
            let spread = size / EARTH_RADIUS_METERS / DEGREES_TO_RADIANS * 1.5;
            for _ in 0..50 {
                // Across the antimeridian, longitudes wrap (as the boxes do). Not 180
                // itself: Redis stores it one box past the map, where no search looks.
                let mut plon = lon + (next() * 2.0 - 1.0) * spread / radians(lat).cos();
                if plon >= LONGITUDE_MAX {
                    plon -= 360.0;
                } else if plon < LONGITUDE_MIN {
                    plon += 360.0;
                }
                let plat = lat + (next() * 2.0 - 1.0) * spread;
                let score = score_of(plon, plat);
                if search.measure(score).is_some() {
                    inside += 1;
                    assert!(
                        ranges.iter().any(|&(min, max)| min <= score && score < max),
                        "round {round}: ({plon}, {plat}) inside {search:?} but in no box"
                    );
                }
            }
        }
        assert!(
            inside > 30_000,
            "only {inside} points fell inside their shapes"
        );
    }

    #[test]
    fn scores_decode_as_c_converts_them() {
        assert_eq!(score_bits(3.0), 3);
        assert_eq!(score_bits(-1.0), u64::MAX);
        // Out of range twice over: i64::MIN, then the offset's bit flipped off.
        assert_eq!(score_bits(1e300), 0);
        assert_eq!(score_bits(1.5e19), 15_000_000_000_000_000_000);
    }
}
