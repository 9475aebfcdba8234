//! Connection names normalise to themselves (issue #39: `"myWorkKey"` made `myworkkey`, a second
//! connection beside the `myWorkKey` that `"My Work Key"` had made).

use executor_core::normalize_connection_name;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Any name, of any script or case: what the server answered is a name that finds itself.
    #[test]
    fn a_normalised_name_normalises_to_itself(input in "\\PC{0,24}") {
        if let Some(once) = normalize_connection_name(&input) {
            prop_assert_eq!(normalize_connection_name(&once), Some(once.clone()), "input {:?}", input);
        }
    }

    /// Words of letters in mixed case and separators: the shapes people type.
    #[test]
    fn typed_names_normalise_to_themselves(input in "[a-zA-ZÉéßİıǅДдΣσς0-9 _./-]{1,24}") {
        if let Some(once) = normalize_connection_name(&input) {
            prop_assert_eq!(normalize_connection_name(&once), Some(once.clone()), "input {:?}", input);
        }
    }
}
