//! One binary with 100 registered services, to measure how start-up, memory
//! and broker connections grow with the number served (`serve --only …`).

use tool_service::tool_service;

macro_rules! services {
    ($($name:ident => $topic:literal),* $(,)?) => {
        $(
            /// Echo the text back.
            ///
            /// # Arguments
            /// * `text` - The text.
            #[tool_service(topic = $topic)]
            async fn $name(text: String) -> String {
                text
            }
        )*
    };
}

services! {
    s000 => "growth-000", s001 => "growth-001", s002 => "growth-002", s003 => "growth-003", s004 => "growth-004",
    s005 => "growth-005", s006 => "growth-006", s007 => "growth-007", s008 => "growth-008", s009 => "growth-009",
    s010 => "growth-010", s011 => "growth-011", s012 => "growth-012", s013 => "growth-013", s014 => "growth-014",
    s015 => "growth-015", s016 => "growth-016", s017 => "growth-017", s018 => "growth-018", s019 => "growth-019",
    s020 => "growth-020", s021 => "growth-021", s022 => "growth-022", s023 => "growth-023", s024 => "growth-024",
    s025 => "growth-025", s026 => "growth-026", s027 => "growth-027", s028 => "growth-028", s029 => "growth-029",
    s030 => "growth-030", s031 => "growth-031", s032 => "growth-032", s033 => "growth-033", s034 => "growth-034",
    s035 => "growth-035", s036 => "growth-036", s037 => "growth-037", s038 => "growth-038", s039 => "growth-039",
    s040 => "growth-040", s041 => "growth-041", s042 => "growth-042", s043 => "growth-043", s044 => "growth-044",
    s045 => "growth-045", s046 => "growth-046", s047 => "growth-047", s048 => "growth-048", s049 => "growth-049",
    s050 => "growth-050", s051 => "growth-051", s052 => "growth-052", s053 => "growth-053", s054 => "growth-054",
    s055 => "growth-055", s056 => "growth-056", s057 => "growth-057", s058 => "growth-058", s059 => "growth-059",
    s060 => "growth-060", s061 => "growth-061", s062 => "growth-062", s063 => "growth-063", s064 => "growth-064",
    s065 => "growth-065", s066 => "growth-066", s067 => "growth-067", s068 => "growth-068", s069 => "growth-069",
    s070 => "growth-070", s071 => "growth-071", s072 => "growth-072", s073 => "growth-073", s074 => "growth-074",
    s075 => "growth-075", s076 => "growth-076", s077 => "growth-077", s078 => "growth-078", s079 => "growth-079",
    s080 => "growth-080", s081 => "growth-081", s082 => "growth-082", s083 => "growth-083", s084 => "growth-084",
    s085 => "growth-085", s086 => "growth-086", s087 => "growth-087", s088 => "growth-088", s089 => "growth-089",
    s090 => "growth-090", s091 => "growth-091", s092 => "growth-092", s093 => "growth-093", s094 => "growth-094",
    s095 => "growth-095", s096 => "growth-096", s097 => "growth-097", s098 => "growth-098", s099 => "growth-099",
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
