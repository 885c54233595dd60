//! GEO commands through the real server: searches find exactly the members their
//! shape holds, STORE forms replace their destination, coordinates reach RESP3
//! clients as doubles. Replies are checked byte for byte against redis-server by
//! `tests/clients/test_compat.py`.

mod support;

use resp::Frame;
use support::{run, Conn, Server};

/// Seeded, so a failure replays.
fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut x = seed;
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// 1,500 points around a centre; searches of many sizes, by radius and by box, must
/// return every member GEODIST puts inside and none it puts outside: the geohash
/// boxes a search scans must never lose a member.
#[test]
fn searches_find_what_the_distances_say() {
    let server = Server::start();
    let mut c = server.client();
    let mut next = uniform(21);
    let (lon, lat) = (-73.98, 40.76);
    let mut add = vec![
        "GEOADD".to_string(),
        "places".into(),
        lon.to_string(),
        lat.to_string(),
        "centre".into(),
    ];
    for i in 0..1500 {
        // Spread over about 2 degrees, denser near the centre.
        let r = next() * next() * 2.0;
        let angle = next() * std::f64::consts::TAU;
        add.push((lon + r * angle.cos()).to_string());
        add.push((lat + r * angle.sin()).to_string());
        add.push(format!("p{i}"));
    }
    let args: Vec<&str> = add.iter().map(String::as_str).collect();
    assert_eq!(run::<i64>(&mut c, &args), 1501);
    let mut distances = Vec::new();
    for i in 0..1500 {
        let d: String = run(
            &mut c,
            &["GEODIST", "places", "centre", &format!("p{i}"), "km"],
        );
        distances.push(d.parse::<f64>().unwrap());
    }
    for radius in [0.5, 3.0, 20.0, 75.0, 150.0, 400.0] {
        let found: Vec<(String, String)> = run(
            &mut c,
            &[
                "GEOSEARCH",
                "places",
                "FROMMEMBER",
                "centre",
                "BYRADIUS",
                &radius.to_string(),
                "km",
                "WITHDIST",
                "ASC",
            ],
        );
        let mut inside: Vec<String> = (0..1500)
            .filter(|&i| distances[i] <= radius)
            .map(|i| format!("p{i}"))
            .collect();
        inside.push("centre".into());
        let mut got: Vec<String> = found.iter().map(|(m, _)| m.clone()).collect();
        got.sort();
        inside.sort();
        assert_eq!(got, inside, "radius {radius} km");
        let ds: Vec<f64> = found.iter().map(|(_, d)| d.parse().unwrap()).collect();
        assert!(
            ds.windows(2).all(|w| w[0] <= w[1]),
            "ASC orders by distance"
        );
        // COUNT keeps the nearest.
        let nearest: Vec<String> = run(
            &mut c,
            &[
                "GEORADIUSBYMEMBER",
                "places",
                "centre",
                &radius.to_string(),
                "km",
                "COUNT",
                "5",
            ],
        );
        let expected: Vec<String> = found.iter().take(5).map(|(m, _)| m.clone()).collect();
        assert_eq!(nearest.len(), expected.len());
        for m in &nearest {
            let d = found
                .iter()
                .find(|(f, _)| f == m)
                .unwrap()
                .1
                .parse::<f64>()
                .unwrap();
            assert!(
                d <= ds[expected.len() - 1],
                "{m} is not among the 5 nearest"
            );
        }
    }
    // A box holds what lies within half its width east-west and half its height
    // north-south: every member GEOSEARCH BYBOX returns lies within its diagonal.
    for side in [10.0, 100.0, 300.0] {
        let found: Vec<(String, String)> = run(
            &mut c,
            &[
                "GEOSEARCH",
                "places",
                "FROMLONLAT",
                &lon.to_string(),
                &lat.to_string(),
                "BYBOX",
                &side.to_string(),
                &side.to_string(),
                "km",
                "WITHDIST",
            ],
        );
        let half_diagonal = side / 2.0 * std::f64::consts::SQRT_2;
        assert!(found
            .iter()
            .all(|(_, d)| d.parse::<f64>().unwrap() <= half_diagonal + 0.001));
        let within_inner_circle = (0..1500)
            .filter(|&i| distances[i] < side / 2.0 - 0.01)
            .count();
        assert!(
            found.len() > within_inner_circle,
            "{side} km box: {} members",
            found.len()
        );
    }
}

/// GEOSEARCHSTORE and GEORADIUS STORE replace the destination whatever it held (its
/// expiry too); an empty result deletes it; STOREDIST stores distances in the unit asked.
#[test]
fn store_forms_replace_their_destination() {
    let server = Server::start();
    let mut c = server.client();
    let _: i64 = run(
        &mut c,
        &[
            "GEOADD",
            "sicily",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania",
        ],
    );
    let _: () = run(&mut c, &["SET", "dst", "a string"]);
    let _: i64 = run(&mut c, &["EXPIRE", "dst", "100"]);
    let stored: i64 = run(
        &mut c,
        &[
            "GEOSEARCHSTORE",
            "dst",
            "sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
            "ASC",
        ],
    );
    assert_eq!(stored, 2);
    assert_eq!(run::<String>(&mut c, &["TYPE", "dst"]), "zset");
    assert_eq!(run::<i64>(&mut c, &["TTL", "dst"]), -1);
    // The stored scores are the members' positions: GEOPOS works on the copy.
    let pos: Vec<Vec<String>> = run(&mut c, &["GEOPOS", "dst", "Palermo"]);
    assert_eq!(pos, [["13.36138933897018433", "38.11555639549629859"]]);
    let stored: i64 = run(
        &mut c,
        &[
            "GEORADIUS",
            "sicily",
            "15",
            "37",
            "200",
            "km",
            "STOREDIST",
            "dst",
        ],
    );
    assert_eq!(stored, 2);
    let scores: Vec<(String, f64)> = run(&mut c, &["ZRANGE", "dst", "0", "-1", "WITHSCORES"]);
    assert_eq!(scores[0].0, "Catania");
    assert!(
        (scores[0].1 - 56.4413).abs() < 1e-3 && (scores[1].1 - 190.4424).abs() < 1e-3,
        "{scores:?}"
    );
    let stored: i64 = run(
        &mut c,
        &[
            "GEOSEARCHSTORE",
            "dst",
            "sicily",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "1",
            "km",
        ],
    );
    assert_eq!(stored, 0);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "dst"]), 0);
}

/// RESP3 clients get coordinates as doubles; distances stay strings, as in Redis.
#[test]
fn coordinates_are_doubles_in_resp3() {
    let server = Server::start();
    let mut c = Conn::open(&server, true);
    c.call(&["GEOADD", "sicily", "13.361389", "38.115556", "Palermo"]);
    let Frame::Array(positions) = c.call(&["GEOPOS", "sicily", "Palermo", "nowhere"]) else {
        panic!("GEOPOS answers an array");
    };
    assert_eq!(
        positions,
        [
            Frame::Array(vec![
                Frame::Double(13.361389338970184),
                Frame::Double(38.1155563954963)
            ]),
            Frame::Null,
        ]
    );
    let reply = c.call(&[
        "GEOSEARCH",
        "sicily",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
        "WITHDIST",
    ]);
    assert_eq!(
        reply,
        Frame::Array(vec![Frame::Array(vec![
            Frame::bulk("Palermo"),
            Frame::bulk("190.4424")
        ])])
    );
}
